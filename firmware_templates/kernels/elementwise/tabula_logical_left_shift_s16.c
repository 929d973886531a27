/* LOGICAL_LEFT_SHIFT int16 with broadcasting: the body is tabula_binary_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_logical_left_shift_s16
#define TABULA_IN_T int16_t
#define TABULA_OUT_T int16_t
#define TABULA_ELEM(x, y) tabula_u16_bits_to_s16((uint16_t)((uint32_t)(uint16_t)(x) << (y)))
#define TABULA_CHECK(x, y) ((y) >= 0 && (y) < 16)
#include "tabula_binary_impl.h"
