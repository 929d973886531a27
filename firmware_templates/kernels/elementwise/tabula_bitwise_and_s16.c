/* BITWISE_AND int16 with broadcasting: the body is tabula_broadcast_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_bitwise_and_s16
#define TABULA_IN_T int16_t
#define TABULA_OUT_T int16_t
#define TABULA_ELEM(x, y) ((x) & (y))

#include "tabula_broadcast_impl.h"
