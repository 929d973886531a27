/* TRANSPOSE_CONV2D int8 x int8 -> int32: the body is tabula_transpose_conv2d_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_transpose_conv2d_s8
#define TABULA_T int8_t
#define TABULA_ACC_BITS 32
#include "tabula_transpose_conv2d_impl.h"
