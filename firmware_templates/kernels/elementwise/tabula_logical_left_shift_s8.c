/* LOGICAL_LEFT_SHIFT int8 with broadcasting: the body is tabula_broadcast_impl.h (TABULA_SHIFT_BITS), the
 * contract manifest.toml. */
#define TABULA_FN tabula_logical_left_shift_s8
#define TABULA_IN_T int8_t
#define TABULA_OUT_T int8_t
#define TABULA_SHIFT_BITS 8
#include "tabula_broadcast_impl.h"
