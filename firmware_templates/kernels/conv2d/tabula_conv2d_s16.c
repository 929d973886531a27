/* CONV2D int16 x int8 -> int48 held in int64_t (a16w8): the body is tabula_conv2d_impl.h, the contract
 * manifest.toml.  int16 is symmetric: no input zero point. */
#define TABULA_FN tabula_conv2d_s16
#define TABULA_CONV_WIDE 1
#include "tabula_conv2d_impl.h"
