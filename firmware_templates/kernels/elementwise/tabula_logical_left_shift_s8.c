/* LOGICAL_LEFT_SHIFT int8 with broadcasting: the body is tabula_binary_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_logical_left_shift_s8
#define TABULA_IN_T int8_t
#define TABULA_OUT_T int8_t
#define TABULA_ELEM(x, y) tabula_u8_bits_to_s8((uint8_t)((uint32_t)(uint8_t)(x) << (y)))
#define TABULA_CHECK(x, y) ((y) >= 0 && (y) < 8)
#include "tabula_binary_impl.h"
