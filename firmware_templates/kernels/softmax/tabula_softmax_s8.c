/* Softmax int8, fused: the body is tabula_softmax_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_softmax_s8
#define TABULA_T int8_t
#include "tabula_softmax_impl.h"
