/*
 * CONV2D int16 x int8 -> int48 held in int64_t (a16w8).  Contract: manifest.toml (conv2d); Python
 * twin: tabula/reference/ops/conv2d.py.
 *
 * int16 activations are symmetric (no input zero point), so padded taps contribute 0 and are
 * skipped.  Each term |x (w - weight_zp)| <= 32768 * 255 fits int32; the sum is taken modulo 2^64
 * (unsigned, never undefined behaviour) and equals TOSA's int48 accumulator whenever the exact sum
 * fits 48 bits, which the IR contract requires (it is not checked here).
 *
 * Helium (MVE, Cortex-M55): with weight_zp == 0 and a patch of at most TABULA_CONV16_PATCH_MAX
 * elements, each output pixel's receptive field is gathered once into a contiguous int16 patch (padded
 * taps hold 0) and every output channel is one predicated VMLALDAVA dot product over it (64-bit
 * accumulator, modulo 2^64 like the scalar path: the same bits).  -DTABULA_PORTABLE_ONLY=1 forces the
 * scalar path.
 *
 * DSP (Cortex-M4, M7, M33; tabula_conv2d_dsp.h), with weight_zp == 0 and a patch of at most
 * TABULA_DSP_PATCH_MAX elements: the patch packed once per pixel into [x0, x2], [x1, x3] words, two
 * output channels per SMLALD loop (64-bit accumulators, modulo 2^64: the same bits).
 *
 * requant != NULL (codegen's fused CONV2D + RESCALE [+ CLAMP]): on either path each accumulator is
 * requantized in a register (tabula_store_acc48: apply_scale_16) and the int16 result written; no int48
 * tensor.
 */
#include <string.h>

#include "tabula_conv2d_dsp.h"
#include "tabula_mve.h"

#if TABULA_HAVE_MVE
#define TABULA_CONV16_PATCH_MAX 1024
/* One output pixel: gather the int16 patch, then one predicated dot product per output channel. */
static void conv16_pixel_mve(const tabula_window *win, int32_t out_c, const int16_t *input, const int8_t *weight,
                             const int64_t *bias, int32_t b, int32_t iy0, int32_t ix0, int16_t *patch,
                             const tabula_requant *requant, void *output, int32_t pix)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t len = kh * kw * c;
    int32_t ky, kx, oc;
    int16_t *dst = patch;
    const int32_t rq_zp = requant ? requant->output_zp : 0, rq_lo = requant ? requant->out_min : 0, rq_hi = requant ? requant->out_max : 0;
    for (ky = 0; ky < kh; ++ky) {
        const int32_t iy = iy0 + ky * win->dilation_y;
        for (kx = 0; kx < kw; ++kx) {
            const int32_t ix = ix0 + kx * win->dilation_x;
            if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
                memset(dst, 0, (size_t)c * sizeof(int16_t));
            } else {
                memcpy(dst, input + ((b * win->h + iy) * win->w + ix) * c, (size_t)c * sizeof(int16_t));
            }
            dst += c;
        }
    }
    for (oc = 0; oc < out_c; ++oc) {
        const int64_t dot = tabula_dot_s16_s8_mve(patch, weight + oc * len, len);
        const int64_t acc = tabula_u64_to_s64((bias ? (uint64_t)bias[oc] : 0u) + (uint64_t)dot);
        TABULA_STORE_ACC48(output, pix + oc, acc, requant, oc, rq_zp, rq_lo, rq_hi);
    }
}
#endif

tabula_status tabula_conv2d_s16(const tabula_window *win, int32_t out_c,
                                const int16_t *input,
                                const int8_t *weight, int32_t weight_zp,
                                const int64_t *bias, const tabula_requant *requant, void *output)
{
    int32_t b, oy, ox, oc, ky, kx, i;
    int32_t n, h, w, c, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    int32_t rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (!tabula_conv_window_ok(win) || out_c < 1 || weight_zp < -128 || weight_zp > 127
        || (requant && !tabula_requant_ok(requant, out_c, 0, 0, -32768, 32767, INT64_C(1) << 15))) {
        return TABULA_ERR_ARG;
    }
    n = win->n; h = win->h; w = win->w; c = win->c;
    oh = win->out_h; ow = win->out_w; kh = win->kernel_h; kw = win->kernel_w;
    sy = win->stride_y; sx = win->stride_x; dy = win->dilation_y; dx = win->dilation_x;
    pt = win->pad_top; pl = win->pad_left;
    if (requant) {
        rq_zp = requant->output_zp; rq_lo = requant->out_min; rq_hi = requant->out_max;
    }
#if TABULA_HAVE_MVE
    if (weight_zp == 0 && kh * kw * c <= TABULA_CONV16_PATCH_MAX) {
        int16_t patch[TABULA_CONV16_PATCH_MAX];
        for (b = 0; b < n; ++b) {
            for (oy = 0; oy < oh; ++oy) {
                for (ox = 0; ox < ow; ++ox) {
                    conv16_pixel_mve(win, out_c, input, weight, bias, b, oy * sy - pt, ox * sx - pl, patch,
                                     requant, output, ((b * oh + oy) * ow + ox) * out_c);
                }
            }
        }
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP
    if (weight_zp == 0 && kh * kw * c <= TABULA_DSP_PATCH_MAX) {
        tabula_dsp_conv2d_s16(win, out_c, input, weight, bias, requant, output);
        return TABULA_OK;
    }
#endif
    for (b = 0; b < n; ++b) {
        for (oy = 0; oy < oh; ++oy) {
            const int32_t iy0 = oy * sy - pt;
            for (ox = 0; ox < ow; ++ox) {
                const int32_t ix0 = ox * sx - pl;
                const int32_t pix = ((b * oh + oy) * ow + ox) * out_c;
                for (oc = 0; oc < out_c; ++oc) {
                    const int8_t *wo = weight + oc * kh * kw * c;
                    uint64_t acc = bias ? (uint64_t)bias[oc] : 0u;
                    for (ky = 0; ky < kh; ++ky) {
                        const int32_t iy = iy0 + ky * dy;
                        if (iy < 0 || iy >= h) {
                            continue;
                        }
                        for (kx = 0; kx < kw; ++kx) {
                            const int32_t ix = ix0 + kx * dx;
                            const int16_t *xp;
                            const int8_t *wp;
                            if (ix < 0 || ix >= w) {
                                continue;
                            }
                            xp = input + ((b * h + iy) * w + ix) * c;
                            wp = wo + (ky * kw + kx) * c;
                            for (i = 0; i < c; ++i) {
                                acc += (uint64_t)(int64_t)((int32_t)xp[i] * ((int32_t)wp[i] - weight_zp));
                            }
                        }
                    }
                    TABULA_STORE_ACC48(output, pix + oc, tabula_u64_to_s64(acc), requant, oc, rq_zp, rq_lo, rq_hi);
                }
            }
        }
    }
    return TABULA_OK;
}
