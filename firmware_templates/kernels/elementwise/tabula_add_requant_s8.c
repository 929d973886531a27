/* ADD / SUB of two int8 activations with their requantization, fused: the body is tabula_add_requant_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_add_requant_s8
#define TABULA_T int8_t
#include "tabula_add_requant_impl.h"
