/* REDUCE_MIN int32: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_min_s32
#define TABULA_T int32_t
#define TABULA_REDUCE TABULA_REDUCE_MIN
#include "tabula_reduce_impl.h"
