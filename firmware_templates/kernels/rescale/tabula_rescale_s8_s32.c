/* RESCALE int8 -> int32: the body is tabula_rescale_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_rescale_s8_s32
#define TABULA_T_IN int8_t
#define TABULA_T_OUT int32_t
#include "tabula_rescale_impl.h"
