/* ARGMAX int8 -> int32: the body is tabula_reduce_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_argmax_s8
#define TABULA_T int8_t
#define TABULA_REDUCE TABULA_REDUCE_ARGMAX
#include "tabula_reduce_impl.h"
