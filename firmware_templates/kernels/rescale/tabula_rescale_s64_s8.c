/* RESCALE int48 (held in int64_t) -> int8: the body is tabula_rescale_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_rescale_s64_s8
#define TABULA_T_IN int64_t
#define TABULA_T_OUT int8_t
#include "tabula_rescale_impl.h"
