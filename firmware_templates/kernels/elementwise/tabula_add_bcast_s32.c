/* ADD int32 with broadcasting: the body is tabula_broadcast_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_add_bcast_s32
#define TABULA_ELEM(x, y) tabula_u32_to_s32((uint32_t)(x) + (uint32_t)(y))
#include "tabula_broadcast_impl.h"
