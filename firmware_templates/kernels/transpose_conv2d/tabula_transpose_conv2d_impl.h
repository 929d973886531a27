/*
 * One body for every TRANSPOSE_CONV2D kernel tabula_transpose_conv2d_<t> (contract: manifest.toml,
 * transpose_conv2d; Python twin: tabula/reference/ops/transpose_conv2d.py).  The variant file
 * transpose_conv2d/tabula_transpose_conv2d_<t>.c defines, then includes this file:
 *     TABULA_FN        the kernel's name
 *     TABULA_T         the input type (int8_t, int16_t)
 *     TABULA_ACC_BITS  32 (int32_t accumulator) or 64 (int64_t holding TOSA int48); tabula_acc.h
 *                      derives the accumulator types from it
 *
 * Gather form of TOSA's scatter: output pixel (oy, ox) receives the taps ky = (oy - pad_top) mod sy,
 * + sy, + 2 sy, ... (input row iy = (oy - pad_top - ky) / sy, when it lies inside) and the same along
 * x, so every output is written once, bias first, and the channels of one tap are a contiguous dot
 * product of an NHWC input pixel with an OHWI weight row: on Helium (weight_zp 0, the IR's) one
 * predicated VMLADAVA / VMLALDAVA loop (tabula_dot_s8_mve: sum x*w - input_zp * sum w; int16 has no
 * zero point), the portable loop otherwise.  Sums are taken modulo 2^32 / 2^64 in the
 * unsigned twin of the accumulator (never undefined behaviour); they equal TOSA's accumulator
 * whenever the exact sum fits it, which the IR requires.  Every product fits int32.
 */
#if !defined(TABULA_FN) || !defined(TABULA_T) || !defined(TABULA_ACC_BITS)
#error "define TABULA_FN, TABULA_T and TABULA_ACC_BITS before including tabula_transpose_conv2d_impl.h"
#endif

#include <stddef.h>

#include "tabula_acc.h"
#include "tabula_mve.h"

/* the first tap of output coordinate o along an axis: (o - pad) mod stride, in [0, stride) */
static int32_t tabula_tconv_first_tap(int32_t o, int32_t pad, int32_t stride)
{
    int32_t r = (o - pad) % stride;
    return r < 0 ? r + stride : r;
}

tabula_status TABULA_FN(int32_t n, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                        int32_t out_c, int32_t kernel_h, int32_t kernel_w, int32_t stride_h, int32_t stride_w,
                        int32_t pad_top, int32_t pad_left, const TABULA_T *input, int32_t input_zp,
                        const int8_t *weight, int32_t weight_zp, const TABULA_ACC *bias, TABULA_ACC *output)
{
    int32_t b, oy, ox, o, ky, kx, i;
    if (n < 1 || in_h < 1 || in_w < 1 || in_c < 1 || out_h < 1 || out_w < 1 || out_c < 1 || kernel_h < 1
        || kernel_w < 1 || stride_h < 1 || stride_w < 1 || pad_top <= -kernel_h || pad_left <= -kernel_w
        || input_zp < TABULA_ZP_MIN(TABULA_T) || input_zp > TABULA_ZP_MAX(TABULA_T) || weight_zp < -128
        || weight_zp > 127) {
        return TABULA_ERR_ARG;
    }
    for (b = 0; b < n; ++b) {
        for (oy = 0; oy < out_h; ++oy) {
            const int32_t ky0 = tabula_tconv_first_tap(oy, pad_top, stride_h);
            for (ox = 0; ox < out_w; ++ox) {
                const int32_t kx0 = tabula_tconv_first_tap(ox, pad_left, stride_w);
                TABULA_ACC *opix = output + (((size_t)b * (size_t)out_h + (size_t)oy) * (size_t)out_w + (size_t)ox)
                                   * (size_t)out_c;
                for (o = 0; o < out_c; ++o) {
                    TABULA_UACC acc = bias != NULL ? (TABULA_UACC)bias[o] : 0u;
                    for (ky = ky0; ky < kernel_h; ky += stride_h) {
                        const int32_t iy = (oy - pad_top - ky) / stride_h;
                        if (oy - pad_top - ky < 0 || iy >= in_h) {
                            continue;
                        }
                        for (kx = kx0; kx < kernel_w; kx += stride_w) {
                            const int32_t ix = (ox - pad_left - kx) / stride_w;
                            const TABULA_T *px;
                            const int8_t *wr;
                            if (ox - pad_left - kx < 0 || ix >= in_w) {
                                continue;
                            }
                            px = input + (((size_t)b * (size_t)in_h + (size_t)iy) * (size_t)in_w + (size_t)ix)
                                 * (size_t)in_c;
                            wr = weight + (((size_t)o * (size_t)kernel_h + (size_t)ky) * (size_t)kernel_w + (size_t)kx)
                                 * (size_t)in_c;
#if TABULA_HAVE_MVE
                            if (weight_zp == 0) { /* Helium: one predicated dot product per tap */
#if TABULA_ACC_BITS == 32
                                int32_t wsum;
                                const int32_t dot = tabula_dot_s8_mve((const int8_t *)px, wr, in_c, &wsum);
                                acc += (TABULA_UACC)dot - (TABULA_UACC)input_zp * (TABULA_UACC)wsum;
#else
                                acc += (TABULA_UACC)tabula_dot_s16_s8_mve((const int16_t *)px, wr, in_c);
#endif
                                continue;
                            }
#endif
                            for (i = 0; i < in_c; ++i) {
                                acc += (TABULA_UACC)(TABULA_ACC)(((int32_t)px[i] - input_zp) * ((int32_t)wr[i] - weight_zp));
                            }
                        }
                    }
                    opix[o] = TABULA_TO_ACC(acc);
                }
            }
        }
    }
    return TABULA_OK;
}

