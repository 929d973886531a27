/* RESIZE BILINEAR int8 -> int32: the body is tabula_resize_bilinear_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_resize_bilinear_s8
#define TABULA_T int8_t
#define TABULA_ACC_BITS 32
#include "tabula_resize_bilinear_impl.h"
