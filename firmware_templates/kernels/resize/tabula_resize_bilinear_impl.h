/*
 * One body for every RESIZE BILINEAR kernel tabula_resize_bilinear_<t> (contract: manifest.toml,
 * resize; Python twin: tabula/reference/ops/resize.py).  The variant file
 * resize/tabula_resize_bilinear_<t>.c defines, then includes this file:
 *     TABULA_FN        the kernel's name
 *     TABULA_T         the input type (int8_t, int16_t)
 *     TABULA_ACC_BITS  32 (int32_t output) or 64 (int64_t holding TOSA int48); tabula_acc.h
 *                      derives the accumulator types from it
 * Per output row and column the two input indices and weights are computed once (TOSA's floor
 * division of y = o*d + offset by n, indices clamped to the input); each output element is the four
 * products of TOSA's formula, exact in the accumulator type (|code| * n_y * n_x <= 2^15 * 2^22).
 */
#if !defined(TABULA_FN) || !defined(TABULA_T) || !defined(TABULA_ACC_BITS)
#error "define TABULA_FN, TABULA_T and TABULA_ACC_BITS before including tabula_resize_bilinear_impl.h"
#endif

#include <stddef.h>

#include "tabula_acc.h"

/* input index i0 = clamp(floor(y / n)), i1 = clamp(i0' + 1) and weight f = y - floor(y / n) * n of
 * output coordinate o (y = o * d + offset) */
static void tabula_bilinear_axis(int32_t o, int32_t size, int32_t n, int32_t d, int32_t offset, int32_t *i0,
                                 int32_t *i1, int32_t *f)
{
    const int32_t y = o * d + offset;
    int32_t i = y / n;
    if (y < 0 && i * n != y) {
        i -= 1; /* floor, not C's truncation */
    }
    *f = y - i * n;
    *i0 = i < 0 ? 0 : (i > size - 1 ? size - 1 : i);
    *i1 = i + 1 < 0 ? 0 : (i + 1 > size - 1 ? size - 1 : i + 1);
}

tabula_status TABULA_FN(const TABULA_T *input, int32_t n, int32_t h, int32_t w, int32_t c, int32_t out_h,
                        int32_t out_w, int32_t scale_y_n, int32_t scale_y_d, int32_t scale_x_n, int32_t scale_x_d,
                        int32_t offset_y, int32_t offset_x, TABULA_ACC *output)
{
    int32_t b, oy, ox, k;
    if (n < 1 || h < 1 || w < 1 || c < 1 || out_h < 1 || out_w < 1 || scale_y_n < 1 || scale_y_n > 2048
        || scale_x_n < 1 || scale_x_n > 2048 || scale_y_d < 1 || scale_y_d >= 16 * scale_y_n || scale_x_d < 1
        || scale_x_d >= 16 * scale_x_n || offset_y < -scale_y_n || offset_y >= 16 * scale_y_n
        || offset_x < -scale_x_n || offset_x >= 16 * scale_x_n) {
        return TABULA_ERR_ARG;
    }
    for (b = 0; b < n; ++b) {
        const TABULA_T *img = input + (size_t)b * (size_t)h * (size_t)w * (size_t)c;
        for (oy = 0; oy < out_h; ++oy) {
            int32_t y0, y1, fy;
            tabula_bilinear_axis(oy, h, scale_y_n, scale_y_d, offset_y, &y0, &y1, &fy);
            for (ox = 0; ox < out_w; ++ox) {
                int32_t x0, x1, fx;
                const TABULA_T *p00, *p01, *p10, *p11;
                TABULA_ACC w00, w01, w10, w11;
                TABULA_ACC *dst = output + (((size_t)b * (size_t)out_h + (size_t)oy) * (size_t)out_w + (size_t)ox)
                                  * (size_t)c;
                tabula_bilinear_axis(ox, w, scale_x_n, scale_x_d, offset_x, &x0, &x1, &fx);
                p00 = img + ((size_t)y0 * (size_t)w + (size_t)x0) * (size_t)c;
                p01 = img + ((size_t)y0 * (size_t)w + (size_t)x1) * (size_t)c;
                p10 = img + ((size_t)y1 * (size_t)w + (size_t)x0) * (size_t)c;
                p11 = img + ((size_t)y1 * (size_t)w + (size_t)x1) * (size_t)c;
                w00 = (TABULA_ACC)(scale_y_n - fy) * (TABULA_ACC)(scale_x_n - fx);
                w01 = (TABULA_ACC)(scale_y_n - fy) * (TABULA_ACC)fx;
                w10 = (TABULA_ACC)fy * (TABULA_ACC)(scale_x_n - fx);
                w11 = (TABULA_ACC)fy * (TABULA_ACC)fx;
                for (k = 0; k < c; ++k) {
                    dst[k] = (TABULA_ACC)p00[k] * w00 + (TABULA_ACC)p01[k] * w01 + (TABULA_ACC)p10[k] * w10
                             + (TABULA_ACC)p11[k] * w11;
                }
            }
        }
    }
    return TABULA_OK;
}
