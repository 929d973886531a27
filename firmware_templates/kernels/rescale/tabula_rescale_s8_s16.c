/* RESCALE int8 -> int16: the body is tabula_rescale_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_rescale_s8_s16
#define TABULA_T_IN int8_t
#define TABULA_T_OUT int16_t
#include "tabula_rescale_impl.h"
