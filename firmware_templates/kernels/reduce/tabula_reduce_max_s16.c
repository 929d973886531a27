/* REDUCE_MAX int16: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_max_s16
#define TABULA_T int16_t
#define TABULA_REDUCE TABULA_REDUCE_MAX
#include "tabula_reduce_impl.h"
