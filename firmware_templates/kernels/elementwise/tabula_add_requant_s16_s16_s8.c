/* ADD / SUB of an int16 and an int16 activation into int8, requantized, fused: the body is tabula_add_requant_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_add_requant_s16_s16_s8
#define TABULA_TA int16_t
#define TABULA_TB int16_t
#define TABULA_TO int8_t
#include "tabula_add_requant_impl.h"
