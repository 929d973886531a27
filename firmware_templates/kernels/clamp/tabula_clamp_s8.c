/* CLAMP int8: the body is tabula_clamp_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_clamp_s8
#define TABULA_T int8_t
#include "tabula_clamp_impl.h"
