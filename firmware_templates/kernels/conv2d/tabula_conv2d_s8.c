/*
 * CONV2D int8 x int8 -> int32.  Contract: manifest.toml (conv2d); Python twin:
 * tabula/reference/ops/conv2d.py.
 *
 * Taps that fall into the padding contribute (input_zp - input_zp) w = 0, so they are skipped.
 * Accumulation is modulo 2^32 (unsigned, so never undefined behaviour); it equals TOSA's int32
 * accumulator whenever the exact sum fits int32, which the IR contract requires.
 * Zero points: with weight_zp == 0 (symmetric weights, the usual case) the input zero point is
 * hoisted out of the inner loop: sum (x - zx) w = sum x w - zx sum w.
 *
 * Helium (MVE, Cortex-M55): with weight_zp == 0 and a patch of at most TABULA_CONV_PATCH_MAX bytes,
 * each output pixel's receptive field is gathered once into a contiguous patch (padded taps hold
 * input_zp, so they contribute (zp - zp) w = 0) and every output channel is one predicated
 * VMLADAVA dot product over it: acc = bias + sum x w - input_zp sum w, modulo 2^32 like the scalar
 * path, so both paths give the same bits.  -DTABULA_PORTABLE_ONLY=1 forces the scalar path.
 *
 * DSP (Cortex-M4, M7, M33; tabula_conv2d_dsp.h), with weight_zp == 0 and a patch of at most TABULA_DSP_PATCH_MAX
 * values: two pixels' patches widened once to 16-bit lanes (x - input_zp), then 2 output channels x
 * 2 pixels per SMLAD block; same bits as the scalar path.
 *
 * requant != NULL (codegen's fused CONV2D + RESCALE [+ CLAMP]): on either path each accumulator is
 * requantized in a register (tabula_store_acc32) and the int8 result written; no int32 tensor.
 */
#include <string.h>

#include "tabula_conv2d_dsp.h"
#include "tabula_mve.h"

#if TABULA_HAVE_MVE
#define TABULA_CONV_PATCH_MAX 2048
/* One output pixel: gather the patch, then one predicated dot product per output channel. */
static void conv_pixel_mve(const tabula_window *win, int32_t out_c, const int8_t *input, int32_t input_zp,
                           const int8_t *weight, const int32_t *bias, int32_t b, int32_t iy0, int32_t ix0,
                           int8_t *patch, const tabula_requant *requant, void *output, int32_t pix)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t len = kh * kw * c;
    int32_t ky, kx, oc;
    int8_t *dst = patch;
    const int32_t rq_zp = requant ? requant->output_zp : 0, rq_lo = requant ? requant->out_min : 0, rq_hi = requant ? requant->out_max : 0;
    for (ky = 0; ky < kh; ++ky) {
        const int32_t iy = iy0 + ky * win->dilation_y;
        for (kx = 0; kx < kw; ++kx) {
            const int32_t ix = ix0 + kx * win->dilation_x;
            if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
                memset(dst, (int)input_zp, (size_t)c);
            } else {
                memcpy(dst, input + ((b * win->h + iy) * win->w + ix) * c, (size_t)c);
            }
            dst += c;
        }
    }
    for (oc = 0; oc < out_c; ++oc) {
        int32_t wsum;
        const int32_t dot = tabula_dot_s8_mve(patch, weight + oc * len, len, &wsum);
        const int32_t acc = tabula_u32_to_s32((bias ? (uint32_t)bias[oc] : 0u) + (uint32_t)dot
                                              - (uint32_t)input_zp * (uint32_t)wsum);
        TABULA_STORE_ACC32(output, pix + oc, acc, requant, oc, rq_zp, rq_lo, rq_hi, 0);
    }
}
#endif

tabula_status tabula_conv2d_s8(const tabula_window *win, int32_t out_c,
                               const int8_t *input, int32_t input_zp,
                               const int8_t *weight, int32_t weight_zp,
                               const int32_t *bias, const tabula_requant *requant, void *output)
{
    int32_t b, oy, ox, oc, ky, kx, i;
    int32_t n, h, w, c, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    int32_t rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (!tabula_conv_window_ok(win) || out_c < 1
        || input_zp < -128 || input_zp > 127 || weight_zp < -128 || weight_zp > 127
        || (requant && !tabula_requant_ok(requant, out_c, -128, 127, -128, 127, INT64_C(1) << 31))) {
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
    if (weight_zp == 0 && kh * kw * c <= TABULA_CONV_PATCH_MAX) {
        int8_t patch[TABULA_CONV_PATCH_MAX];
        for (b = 0; b < n; ++b) {
            for (oy = 0; oy < oh; ++oy) {
                for (ox = 0; ox < ow; ++ox) {
                    conv_pixel_mve(win, out_c, input, input_zp, weight, bias, b, oy * sy - pt, ox * sx - pl, patch,
                                   requant, output, ((b * oh + oy) * ow + ox) * out_c);
                }
            }
        }
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP
    if (weight_zp == 0 && kh * kw * c <= TABULA_DSP_PATCH_MAX) {
        tabula_dsp_conv2d_s8(win, out_c, input, input_zp, input_zp, weight, bias, requant, output);
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
                    uint32_t acc = bias ? (uint32_t)bias[oc] : 0u;
                    int32_t wsum = 0; /* sum of the weights at valid taps (weight_zp == 0 path) */
                    for (ky = 0; ky < kh; ++ky) {
                        const int32_t iy = iy0 + ky * dy;
                        if (iy < 0 || iy >= h) {
                            continue;
                        }
                        for (kx = 0; kx < kw; ++kx) {
                            const int32_t ix = ix0 + kx * dx;
                            const int8_t *xp;
                            const int8_t *wp;
                            if (ix < 0 || ix >= w) {
                                continue;
                            }
                            xp = input + ((b * h + iy) * w + ix) * c;
                            wp = wo + (ky * kw + kx) * c;
                            if (weight_zp == 0) {
                                for (i = 0; i < c; ++i) {
                                    acc += (uint32_t)((int32_t)xp[i] * (int32_t)wp[i]);
                                    wsum += wp[i];
                                }
                            } else {
                                for (i = 0; i < c; ++i) {
                                    acc += (uint32_t)(((int32_t)xp[i] - input_zp) * ((int32_t)wp[i] - weight_zp));
                                }
                            }
                        }
                    }
                    acc -= (uint32_t)input_zp * (uint32_t)wsum;
                    TABULA_STORE_ACC32(output, pix + oc, tabula_u32_to_s32(acc), requant, oc, rq_zp, rq_lo, rq_hi, 0);
                }
            }
        }
    }
    return TABULA_OK;
}
