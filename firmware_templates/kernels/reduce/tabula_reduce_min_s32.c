/* REDUCE_MIN int32: the body is tabula_reduce_min_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_min_s32
#define TABULA_T int32_t
#include "tabula_reduce_min_impl.h"
