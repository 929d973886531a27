/* ARGMAX int16 -> int32: the body is tabula_argmax_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_argmax_s16
#define TABULA_T int16_t
#include "tabula_argmax_impl.h"
