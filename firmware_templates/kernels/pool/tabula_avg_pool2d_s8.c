/*
 * AVG_POOL2D int8 (TOSA 1.0 AVG_POOL2D), NHWC [N,H,W,C] -> [N,OH,OW,C].
 *     acc   = sum over the window's valid (non-padded) taps of (x - input_zp)      (int32)
 *     count = number of valid taps;  (m, s) = TOSA reciprocal_scale(count)
 *     out   = clamp(apply_scale_32(acc, m, s) + output_zp, -128, 127)
 * Padded taps are excluded from both the sum and the count.  Python twin:
 * tabula/reference/ops/avg_pool2d.py.
 *
 * The sum is taken modulo 2^32 (unsigned, never undefined behaviour); it equals TOSA's int32
 * accumulator whenever the exact sum fits int32, which the IR contract requires (at most 2^23 taps
 * always fit).
 *
 * Argument contract (TABULA_ERR_ARG otherwise): the pooling window rules of MAX_POOL2D (sizes,
 * kernel, stride >= 1, dilation == 1, 0 <= pad_top < kernel_h, 0 <= pad_left < kernel_w, the last
 * window starts inside the input), kernel_h * kernel_w <= 2^30 (reciprocal_scale's multiplier stays
 * below 2^31), input_zp and output_zp in [-128, 127].
 */
#include "tabula_internal.h"

tabula_status tabula_avg_pool2d_s8(const tabula_window *win, const int8_t *input, int32_t input_zp,
                                   int32_t output_zp, int8_t *output)
{
    int32_t b, oy, ox, ky, kx, i;
    int32_t n, h, w, c, oh, ow, kh, kw, sy, sx, pt, pl;
    if (!tabula_pool_window_ok(win) || (int64_t)win->kernel_h * win->kernel_w > (INT64_C(1) << 30)
        || input_zp < -128 || input_zp > 127 || output_zp < -128 || output_zp > 127) {
        return TABULA_ERR_ARG;
    }
    n = win->n; h = win->h; w = win->w; c = win->c;
    oh = win->out_h; ow = win->out_w; kh = win->kernel_h; kw = win->kernel_w;
    sy = win->stride_y; sx = win->stride_x; pt = win->pad_top; pl = win->pad_left;
    for (b = 0; b < n; ++b) {
        for (oy = 0; oy < oh; ++oy) {
            const int32_t iy0 = oy * sy - pt;
            const int32_t ky0 = iy0 < 0 ? -iy0 : 0;
            const int32_t ky1 = (h - iy0) < kh ? (h - iy0) : kh;
            for (ox = 0; ox < ow; ++ox) {
                const int32_t ix0 = ox * sx - pl;
                const int32_t kx0 = ix0 < 0 ? -ix0 : 0;
                const int32_t kx1 = (w - ix0) < kw ? (w - ix0) : kw;
                const int32_t count = (ky1 - ky0) * (kx1 - kx0);
                const int32_t base = ((b * h + iy0) * w + ix0) * c; /* may be < 0: only offset, never a pointer */
                int8_t *out = output + ((b * oh + oy) * ow + ox) * c;
                int32_t m, s;
                tabula_reciprocal_scale(count, &m, &s);
                for (i = 0; i < c; ++i) {
                    uint32_t acc = 0u;
                    int64_t v;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            const int32_t x = input[base + (ky * w + kx) * c + i];
                            acc += (uint32_t)x;
                        }
                    }
                    acc -= (uint32_t)count * (uint32_t)input_zp;
                    v = tabula_apply_scale_32(tabula_u32_to_s32(acc), m, s) + output_zp;
                    out[i] = (int8_t)tabula_clamp64(v, -128, 127);
                }
            }
        }
    }
    return TABULA_OK;
}
