/* CONV2D int8 x int8 -> int32: the body is tabula_conv2d_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_conv2d_s8
#define TABULA_CONV_WIDE 0
#include "tabula_conv2d_impl.h"
