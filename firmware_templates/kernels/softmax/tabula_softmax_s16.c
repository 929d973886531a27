/* Softmax int16, fused: the body is tabula_softmax_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_softmax_s16
#define TABULA_T int16_t
#include "tabula_softmax_impl.h"
