/* CONV2D int16 x int8 -> int48 -> RESCALE (apply_scale_16) -> int8: a precision boundary of scheme=mixed
 * with its requantization in the epilogue.  The body is tabula_conv2d_impl.h, the contract manifest.toml.
 * int16 is symmetric: no input zero point. */
#define TABULA_FN tabula_conv2d_s16_s8
#define TABULA_CONV_WIDE 1
#define TABULA_CONV_CROSS 1
#include "tabula_conv2d_impl.h"
