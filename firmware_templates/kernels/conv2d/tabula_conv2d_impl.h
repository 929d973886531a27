/*
 * One body for CONV2D tabula_conv2d_s8 / _s16 (contract: manifest.toml, conv2d; Python twin:
 * tabula/reference/ops/conv2d.py).  The variant file conv2d/tabula_conv2d_<t>.c defines, then includes
 * this file:
 *     TABULA_FN          the kernel's name
 *     TABULA_CONV_WIDE   0: int8 x int8 -> int32; 1: int16 x int8 -> int48 held in int64_t (a16w8)
 *     TABULA_CONV_CROSS  (optional, default 0) 1 with TABULA_CONV_WIDE: the precision boundary's kernel
 *                        (_s16_s8: int48 -> int8), which requires a requant block (NULL is TABULA_ERR_ARG),
 *                        checks its bounds against int8 (TABULA_REQUANT_INVALID_X) and stores int8 --
 *                        Helium: through tabula_conv2d_s16_mve.h where it applies, else the portable loop
 *                        (the 64-bit Helium and the DSP paths store int16 only)
 * Everything else follows from it: the input type, the accumulator (int32 modulo 2^32, int48 in a
 * uint64 modulo 2^64), the requantization (apply_scale_32 to int8, apply_scale_16 to int16), the input
 * zero point (int8 only: int16 activations are symmetric), the Helium dot product and the DSP path.
 *
 * Taps that fall into the padding contribute (input_zp - input_zp) w = 0, so they are skipped.
 * Accumulation is modulo 2^32 (2^64) (unsigned, so never undefined behaviour); it equals TOSA's
 * accumulator whenever the exact sum fits it, which the IR contract requires (it is not checked here;
 * int16: each term |x (w - weight_zp)| <= 32768 * 255 fits int32).  int8 with weight_zp == 0
 * (symmetric weights, the usual case): the input zero point is hoisted out of the inner loop,
 * sum (x - zx) w = sum x w - zx sum w.
 *
 * Helium (MVE, Cortex-M55): with weight_zp == 0 and a patch of at most TABULA_CONV_PATCH_MAX elements,
 * each output pixel's receptive field is gathered once into a contiguous patch (padded taps hold
 * input_zp, so they contribute (zp - zp) w = 0).  int8: every output channel is one predicated dot
 * product over it (VMLADAVA: acc = bias + sum x w - input_zp sum w).  int16 (a16w8) with requant, every
 * shift in [17, 46] and every sum provably within int32: tabula_conv2d_s16_mve.h (32-bit accumulators, 2
 * pixels x 2 output channels per pass over the NHWC rows or gathered fields); otherwise the field is a row
 * of the input itself when it can be (a 1xk window inside the input), else gathered (conv_field16_mve),
 * then tabula_gemv_s16_mve (tabula_mve.h): two output channels per input-vector load (VMLALDAVA into
 * 64-bit accumulators started at the bias, 3 loads + 2 MACs per 16 MACs) and the int48 requantization
 * 4 channels per vector where they fit int32 and every shift is in [17, 46] (tabula_requant4_s16_mve),
 * else per channel.  Sums modulo 2^32 (2^64) like the scalar path, so both paths give the same bits.
 * -DTABULA_PORTABLE_ONLY=1 forces the scalar path; -DTABULA_NO_ASM=1 the C twin of the assembly loop.  (int8 CONV2D with symmetric weights and a folded
 * bias takes tabula_conv2d_s8_folded, the faster kernel codegen calls.)
 *
 * DSP (Cortex-M4, M7, M33), with weight_zp == 0 and a patch of at most TABULA_DSP_PATCH_MAX values: int8
 * (tabula_conv2d_dsp.h), two pixels' patches widened once to 16-bit lanes (x - input_zp), then 2 output
 * channels x 2 pixels per SMLAD block; int16, Helium's patch per pixel (conv_pixel, the same gather)
 * packed into [x0, x2], [x1, x3] words, two output channels per SMLALD loop (tabula_dsp.h); same bits
 * as the scalar path.
 *
 * requant != NULL (codegen's fused CONV2D + RESCALE [+ CLAMP]): on every path each accumulator is
 * requantized in a register (TABULA_STORE_ACC32 / 48) and the int8 (int16) result written; no
 * accumulator tensor.
 */
#if !defined(TABULA_FN) || !defined(TABULA_CONV_WIDE)
#error "define TABULA_FN and TABULA_CONV_WIDE before including tabula_conv2d_impl.h"
#endif

#include <string.h>

#ifndef TABULA_CONV_CROSS
#define TABULA_CONV_CROSS 0
#endif

#include "tabula_conv2d_dsp.h"
#include "tabula_mve.h"

#if TABULA_CONV_WIDE
#define TABULA_CONV_T int16_t
#define TABULA_CONV_ACC_T int64_t
#define TABULA_CONV_ZP_PARAM
#define TABULA_CONV_ZP_ARG
#define TABULA_CONV_ZP 0
#if TABULA_CONV_CROSS
#define TABULA_CONV_OUT_T int8_t
#define TABULA_CONV_STORE(output, at, acc, rq, o, zp, lo, hi)                                              \
    TABULA_STORE_REQ48(output, at, acc, rq, o, zp, lo, hi, int8_t)
#else
#define TABULA_CONV_OUT_T int16_t
#define TABULA_CONV_STORE(output, at, acc, rq, o, zp, lo, hi) TABULA_STORE_ACC48(output, at, acc, rq, o, zp, lo, hi)
#endif
#else
#define TABULA_CONV_T int8_t
#define TABULA_CONV_OUT_T int8_t
#define TABULA_CONV_ACC_T int32_t
#define TABULA_CONV_ZP_PARAM int32_t input_zp,
#define TABULA_CONV_ZP_ARG input_zp,
#define TABULA_CONV_ZP input_zp
#define TABULA_CONV_STORE(output, at, acc, rq, o, zp, lo, hi) TABULA_STORE_ACC32(output, at, acc, rq, o, zp, lo, hi, 0)
#endif

/* The patch paths, Helium (both widths) and DSP int16: per output pixel (conv_pixel) the receptive field
 * is gathered once into a contiguous patch of at most TABULA_CONV_PATCH_MAX values (padded taps hold the
 * input zero point, so they add (zp - zp) w = 0), then every output channel is a dot product over it. */
#if TABULA_HAVE_MVE && TABULA_CONV_WIDE
#define TABULA_CONV_PATCH_MAX 1024
/* The receptive field of the window at (iy0, ix0) of image b (len = kh*kw*c <= TABULA_CONV_PATCH_MAX
 * values) as one contiguous int16 row: a 1x1 window inside the input is its input row (no copy); an
 * interior window with dilation_x 1 is gathered as kh rows of kw*c values; otherwise tap by tap, a
 * padded tap as zeros (int16 is symmetric: (0 - 0) w adds nothing).  Byte copies (tabula_copy_s8_mve)
 * of 2 bytes per value. */
static const int16_t *conv_field16_mve(const tabula_window *win, const int16_t *input, int32_t b, int32_t iy0,
                                       int32_t ix0, int16_t *patch)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w, h = win->h, w = win->w;
    int16_t *dst = patch;
    int32_t ky, kx;
    if (win->dilation_x == 1 && iy0 >= 0 && ix0 >= 0 && iy0 + (kh - 1) * win->dilation_y < h && ix0 + kw - 1 < w) {
        const int16_t *row = input + ((b * h + iy0) * w + ix0) * c;
        if (kh == 1) {
            return row; /* one row of kw*c contiguous values: itself */
        }
        for (ky = 0; ky < kh; ++ky, dst += kw * c, row += win->dilation_y * w * c) {
            tabula_copy_s8_mve((int8_t *)dst, (const int8_t *)row, 2 * kw * c);
        }
        return patch;
    }
    for (ky = 0; ky < kh; ++ky) {
        const int32_t iy = iy0 + ky * win->dilation_y;
        for (kx = 0; kx < kw; ++kx, dst += c) {
            const int32_t ix = ix0 + kx * win->dilation_x;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
                tabula_fill_s8_mve((int8_t *)dst, 0, 2 * c);
            } else {
                tabula_copy_s8_mve((int8_t *)dst, (const int8_t *)(input + ((b * h + iy) * w + ix) * c), 2 * c);
            }
        }
    }
    return patch;
}

#include "tabula_conv2d_s16_mve.h"
#endif

#if (TABULA_HAVE_MVE && !TABULA_CONV_WIDE) || (TABULA_HAVE_DSP && TABULA_CONV_WIDE && !TABULA_CONV_CROSS)
#if TABULA_HAVE_MVE
#define TABULA_CONV_PATCH_MAX 2048
#else
#define TABULA_CONV_PATCH_MAX TABULA_DSP_PATCH_MAX
#endif
/* One output pixel: gather the patch, then one predicated dot product per output channel (Helium) or,
 * DSP, the patch packed once into [x0, x2], [x1, x3] words and two output channels per
 * tabula_dsp_dot2_s16 (tabula_dsp.h). */
static void conv_pixel(const tabula_window *win, int32_t out_c, const TABULA_CONV_T *input, TABULA_CONV_ZP_PARAM
                       const int8_t *weight, const TABULA_CONV_ACC_T *bias, int32_t b, int32_t iy0, int32_t ix0,
                       TABULA_CONV_T *patch, const tabula_requant *requant, void *output, int32_t pix)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t len = kh * kw * c;
    int32_t ky, kx, oc;
    TABULA_CONV_T *dst = patch;
    const int32_t rq_zp = requant ? requant->output_zp : 0, rq_lo = requant ? requant->out_min : 0,
                  rq_hi = requant ? requant->out_max : 0;
#if !TABULA_HAVE_MVE
    int32_t xw[TABULA_DSP_PATCH_MAX / 2 + 4]; /* the packed patch */
#endif
    for (ky = 0; ky < kh; ++ky) {
        const int32_t iy = iy0 + ky * win->dilation_y;
        for (kx = 0; kx < kw; ++kx) {
            const int32_t ix = ix0 + kx * win->dilation_x;
            if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
                memset(dst, (int)TABULA_CONV_ZP, (size_t)c * sizeof(TABULA_CONV_T));
            } else {
                memcpy(dst, input + ((b * win->h + iy) * win->w + ix) * c, (size_t)c * sizeof(TABULA_CONV_T));
            }
            dst += c;
        }
    }
#if TABULA_HAVE_MVE
    for (oc = 0; oc < out_c; ++oc) {
        int32_t wsum;
        const int32_t dot = tabula_dot_s8_mve(patch, weight + oc * len, len, &wsum);
        const int32_t acc = tabula_u32_to_s32((bias ? (uint32_t)bias[oc] : 0u) + (uint32_t)dot
                                              - (uint32_t)input_zp * (uint32_t)wsum);
        TABULA_CONV_STORE(output, pix + oc, acc, requant, oc, rq_zp, rq_lo, rq_hi);
    }
#else
    tabula_dsp_pack16_row(patch, len, xw);
    for (oc = 0; oc < out_c; oc += 2) {
        tabula_dsp_rows2_s16(xw, len, weight, oc, oc + 1 < out_c ? oc + 1 : oc, bias, requant, rq_zp, rq_lo, rq_hi,
                             output, pix);
    }
#endif
}
#endif

tabula_status TABULA_FN(const tabula_window *win, int32_t out_c, const TABULA_CONV_T *input, TABULA_CONV_ZP_PARAM
                        const int8_t *weight, int32_t weight_zp, const TABULA_CONV_ACC_T *bias,
                        const tabula_requant *requant, void *output)
{
    int32_t b, oy, ox, oc, ky, kx, i;
    int32_t n, h, w, c, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    int32_t rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (!tabula_conv_window_ok(win) || out_c < 1 || TABULA_CONV_ZP < TABULA_ZP_MIN(TABULA_CONV_T)
        || TABULA_CONV_ZP > TABULA_ZP_MAX(TABULA_CONV_T) || weight_zp < -128 || weight_zp > 127
        || (TABULA_CONV_CROSS && !requant)
        || TABULA_REQUANT_INVALID_X(requant, out_c, TABULA_CONV_OUT_T, TABULA_CONV_WIDE)) {
        return TABULA_ERR_ARG;
    }
    TABULA_WINDOW_LOCALS(win);
    TABULA_REQUANT_READ(requant, rq_zp, rq_lo, rq_hi)
#if TABULA_HAVE_MVE && TABULA_CONV_WIDE
    if (conv16_fast_ok(win, out_c, weight, weight_zp, bias, requant)) { /* tabula_conv2d_s16_mve.h */
        conv16_fast_mve(win, out_c, input, weight, bias, requant, (TABULA_CONV_OUT_T *)output);
        return TABULA_OK;
    }
    if (!TABULA_CONV_CROSS && weight_zp == 0 && kh * kw * c <= TABULA_CONV_PATCH_MAX) {
        int16_t patch[TABULA_CONV_PATCH_MAX];
        const int vec = requant != 0 && tabula_requant_s16_vec_ok(requant, out_c);
        for (b = 0; b < n; ++b) {
            for (oy = 0; oy < oh; ++oy) {
                for (ox = 0; ox < ow; ++ox) {
                    const int32_t pix = ((b * oh + oy) * ow + ox) * out_c;
                    tabula_gemv_s16_mve(conv_field16_mve(win, input, b, oy * sy - pt, ox * sx - pl, patch), kh * kw * c,
                                        weight, out_c, bias, requant, vec,
                                        requant ? (void *)((int16_t *)output + pix) : (void *)((int64_t *)output + pix));
                }
            }
        }
        return TABULA_OK;
    }
#elif TABULA_HAVE_MVE || (TABULA_HAVE_DSP && TABULA_CONV_WIDE && !TABULA_CONV_CROSS)
    if (weight_zp == 0 && kh * kw * c <= TABULA_CONV_PATCH_MAX) {
        TABULA_CONV_T patch[TABULA_CONV_PATCH_MAX];
        for (b = 0; b < n; ++b) {
            for (oy = 0; oy < oh; ++oy) {
                for (ox = 0; ox < ow; ++ox) {
                    conv_pixel(win, out_c, input, TABULA_CONV_ZP_ARG weight, bias, b, oy * sy - pt, ox * sx - pl, patch,
                               requant, output, ((b * oh + oy) * ow + ox) * out_c);
                }
            }
        }
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP && !TABULA_CONV_WIDE
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
#if TABULA_CONV_WIDE
                    uint64_t acc = bias ? (uint64_t)bias[oc] : 0u;
#else
                    uint32_t acc = bias ? (uint32_t)bias[oc] : 0u;
                    int32_t wsum = 0; /* sum of the weights at valid taps (weight_zp == 0 path) */
#endif
                    for (ky = 0; ky < kh; ++ky) {
                        const int32_t iy = iy0 + ky * dy;
                        if (iy < 0 || iy >= h) {
                            continue;
                        }
                        for (kx = 0; kx < kw; ++kx) {
                            const int32_t ix = ix0 + kx * dx;
                            const TABULA_CONV_T *xp;
                            const int8_t *wp;
                            if (ix < 0 || ix >= w) {
                                continue;
                            }
                            xp = input + ((b * h + iy) * w + ix) * c;
                            wp = wo + (ky * kw + kx) * c;
#if TABULA_CONV_WIDE
                            for (i = 0; i < c; ++i) {
                                acc += (uint64_t)(int64_t)((int32_t)xp[i] * ((int32_t)wp[i] - weight_zp));
                            }
#else
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
#endif
                        }
                    }
#if TABULA_CONV_WIDE
                    TABULA_CONV_STORE(output, pix + oc, tabula_u64_to_s64(acc), requant, oc, rq_zp, rq_lo, rq_hi);
#else
                    acc -= (uint32_t)input_zp * (uint32_t)wsum;
                    TABULA_CONV_STORE(output, pix + oc, tabula_u32_to_s32(acc), requant, oc, rq_zp, rq_lo, rq_hi);
#endif
                }
            }
        }
    }
    return TABULA_OK;
}
