/* TRANSPOSE_CONV2D int16 x int8 -> int48 (held in int64_t): the body is tabula_transpose_conv2d_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_transpose_conv2d_s16
#define TABULA_T int16_t
#define TABULA_ACC_BITS 64
#include "tabula_transpose_conv2d_impl.h"
