/* RESIZE BILINEAR int16 -> int48 (held in int64_t): the body is tabula_resize_bilinear_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_resize_bilinear_s16
#define TABULA_T int16_t
#define TABULA_ACC_BITS 64
#include "tabula_resize_bilinear_impl.h"
