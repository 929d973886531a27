/* LOGICAL_LEFT_SHIFT int32 with broadcasting: the body is tabula_binary_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_logical_left_shift_s32
#define TABULA_IN_T int32_t
#define TABULA_OUT_T int32_t
#define TABULA_ELEM(x, y) tabula_u32_bits_to_s32((uint32_t)((uint32_t)(x) << (y)))
#define TABULA_CHECK(x, y) ((y) >= 0 && (y) <= 31)
#include "tabula_binary_impl.h"
