/* REDUCE_MAX int32: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_max_s32
#define TABULA_T int32_t
#define TABULA_REDUCE TABULA_REDUCE_MAX
#include "tabula_reduce_impl.h"
