/* CLAMP int16: the body is tabula_clamp_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_clamp_s16
#define TABULA_T int16_t
#include "tabula_clamp_impl.h"
