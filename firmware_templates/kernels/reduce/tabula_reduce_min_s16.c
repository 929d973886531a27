/* REDUCE_MIN int16: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_min_s16
#define TABULA_T int16_t
#define TABULA_REDUCE TABULA_REDUCE_MIN
#include "tabula_reduce_impl.h"
