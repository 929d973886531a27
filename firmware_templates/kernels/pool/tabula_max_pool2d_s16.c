/*
 * MAX_POOL2D int16 (TOSA 1.0 MAX_POOL2D), NHWC [N,H,W,C] -> [N,OH,OW,C].
 *     out[n,oy,ox,c] = max over the window rows oy*sy - pt + ky, cols ox*sx - pl + kx (in range)
 * Padded positions never win: they are skipped (as if -32768), and every window holds at least one
 * real element (checked below).  Python twin: tabula/reference/ops/max_pool2d.py.
 *
 * Argument contract (TABULA_ERR_ARG otherwise): sizes, kernel, stride >= 1; dilation == 1 (TOSA
 * pooling has none); 0 <= pad_top < kernel_h, 0 <= pad_left < kernel_w (TOSA), and the last
 * window starts inside the input ((out_h - 1) * stride_y - pad_top < h, same for x).
 */
#include "tabula_internal.h"

tabula_status tabula_max_pool2d_s16(const tabula_window *win, const int16_t *input, int16_t *output)
{
    int32_t b, oy, ox, ky, kx, i;
    int32_t n, h, w, c, oh, ow, kh, kw, sy, sx, pt, pl;
    if (!tabula_pool_window_ok(win)) {
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
                int16_t *out = output + ((b * oh + oy) * ow + ox) * c;
                for (i = 0; i < c; ++i) {
                    out[i] = -32768;
                }
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        const int16_t *xp = input + ((b * h + iy0 + ky) * w + ix0 + kx) * c;
                        for (i = 0; i < c; ++i) {
                            out[i] = xp[i] > out[i] ? xp[i] : out[i];
                        }
                    }
                }
            }
        }
    }
    return TABULA_OK;
}
