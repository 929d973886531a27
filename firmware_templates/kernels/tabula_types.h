/*
 * The fixed C types of the kernel API: the status every kernel returns and the geometry of a 2-D
 * window op.  Included by tabula_kernels.h (generated from manifest.toml by python/tabula/kernels.py,
 * which also reads this file for the ctypes mirrors of both: keep one declaration per line).
 */
#ifndef TABULA_TYPES_H
#define TABULA_TYPES_H

#include <stdint.h>

typedef enum {
    TABULA_OK = 0,
    TABULA_ERR_ARG = 1,           /* a size, stride, shift or zero point outside the kernel's contract */
} tabula_status;

/* Shape and geometry of a 2-D window op (CONV2D, MAX_POOL2D, AVG_POOL2D). */
typedef struct {
    int32_t n, h, w, c;           /* input  [N,H,W,C] */
    int32_t out_h, out_w;         /* output spatial size */
    int32_t kernel_h, kernel_w;
    int32_t stride_y, stride_x;
    int32_t dilation_y, dilation_x;
    int32_t pad_top, pad_left;    /* bottom/right padding is implied by out_h/out_w */
} tabula_window;

#endif /* TABULA_TYPES_H */
