/* RESCALE int48 (held in int64_t) -> int8 clamped to [out_min, out_max] (a RESCALE and its CLAMP, fused by codegen): the body is
 * tabula_rescale_impl.h, the contract manifest.toml. */
#define TABULA_FN_CLAMP tabula_rescale_clamp_s64_s8
#define TABULA_T_IN int64_t
#define TABULA_T_OUT int8_t
#include "tabula_rescale_impl.h"
