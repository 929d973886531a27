/* LOGICAL_LEFT_SHIFT int32 with broadcasting: the body is tabula_broadcast_impl.h (TABULA_SHIFT_BITS), the
 * contract manifest.toml. */
#define TABULA_FN tabula_logical_left_shift_s32
#define TABULA_SHIFT_BITS 32
#include "tabula_broadcast_impl.h"
