/* BITWISE_OR int32 with broadcasting: the body is tabula_broadcast_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_bitwise_or_s32
#define TABULA_ELEM(x, y) ((x) | (y))

#include "tabula_broadcast_impl.h"
