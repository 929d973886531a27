/* REDUCE_MIN int8: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_min_s8
#define TABULA_T int8_t
#define TABULA_REDUCE TABULA_REDUCE_MIN
#include "tabula_reduce_impl.h"
