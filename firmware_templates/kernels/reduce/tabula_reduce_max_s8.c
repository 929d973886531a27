/* REDUCE_MAX int8: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_reduce_max_s8
#define TABULA_T int8_t
#define TABULA_REDUCE TABULA_REDUCE_MAX
#include "tabula_reduce_impl.h"
