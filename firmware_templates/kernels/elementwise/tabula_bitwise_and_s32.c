/* BITWISE_AND int32 with broadcasting: the body is tabula_binary_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_bitwise_and_s32
#define TABULA_IN_T int32_t
#define TABULA_OUT_T int32_t
#define TABULA_ELEM(x, y) ((x) & (y))

#include "tabula_binary_impl.h"
