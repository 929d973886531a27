/* ADD / SUB of an int8 and an int16 activation into int16, requantized, fused: the body is tabula_add_requant_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_add_requant_s8_s16_s16
#define TABULA_TA int8_t
#define TABULA_TB int16_t
#define TABULA_TO int16_t
#include "tabula_add_requant_impl.h"
