/* ADD / SUB of two int16 activations with their requantization, fused: the body is tabula_add_requant_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_add_requant_s16
#define TABULA_T int16_t
#include "tabula_add_requant_impl.h"
