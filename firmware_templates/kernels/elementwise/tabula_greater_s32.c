/* GREATER int32 -> int8 mask with broadcasting: the body is tabula_broadcast_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_greater_s32
#define TABULA_OUT_T int8_t
#define TABULA_ELEM(x, y) ((x) > (y) ? 1 : 0)

#include "tabula_broadcast_impl.h"
