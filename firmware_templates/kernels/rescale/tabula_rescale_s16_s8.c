/* RESCALE int16 -> int8: the body is tabula_rescale_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_rescale_s16_s8
#define TABULA_T_IN int16_t
#define TABULA_T_OUT int8_t
#include "tabula_rescale_impl.h"
