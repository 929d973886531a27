/*
 * One body for DEPTHWISE_CONV2D tabula_depthwise_conv2d_s8 / _s16 (contract: manifest.toml,
 * depthwise_conv2d; Python twin: tabula/reference/ops/depthwise_conv2d.py).
 * The variant file depthwise_conv2d/tabula_depthwise_conv2d_<t>.c defines, then includes this file:
 *     TABULA_DW_T       the input type (int8_t, int16_t): its zero-point range follows from it
 *     TABULA_DW_ACC_T   the accumulator type (int32_t; int64_t holding TOSA's int48)
 *     TABULA_DW_UACC_T  its unsigned twin (uint32_t, uint64_t): sums are taken modulo 2^32 / 2^64
 *     TABULA_DW_TO_ACC  the unsigned -> signed conversion (tabula_u32_to_s32, tabula_u64_to_s64)
 *     TABULA_DW_WIDE    0: the accumulator is 32 bits; 1: 64 bits (the Helium path sums the taps in
 *                       32-bit lanes and adds the bias in 64 bits)
 *     TABULA_DW_OUT_T   the requantized output type (int8_t, int16_t)
 *     TABULA_DW_STORE   its store (TABULA_STORE_ACC32, TABULA_STORE_ACC48 of tabula_requant.h, with the
 *                       arguments of tabula_store_acc48)
 *     TABULA_DW_CROSS   (optional, default 0) 1: a precision boundary's kernel (_s16_s8: int48 -> int8,
 *                       _s8_s16: int32 -> int16), whose output type is not the input's; it requires a
 *                       requant block (NULL is TABULA_ERR_ARG: there is no accumulator output), checks
 *                       the multipliers against the accumulator's limit and the bounds against the
 *                       output type's (TABULA_REQUANT_INVALID_X), and stores through the same paths
 *                       with the other element size (Helium: tabula_requant4_s16_s8_mve /
 *                       tabula_requant4_s8_s16_mve; int8 input: not tabula_dw_mve16, whose int8-input
 *                       stores are int8, and on DSP cores the per-channel store instead of tabula_dsp_store4)
 * and gets the static function tabula_dw_body(), which its public kernel calls.  Its Helium and DSP paths
 * are tabula_dw_fast (tabula_depthwise_conv2d_fast.h: one walk, each ISA's channel loop) with their
 * helpers in tabula_depthwise_conv2d_mve.h and tabula_depthwise_conv2d_dsp.h, typed by the same macros.
 *
 * Layouts: input NHWC [N][H][W][C]; weight [KH][KW][C*M] (TOSA's [KH, KW, C, M]); bias and the
 * output's last axis [C*M], output channel o = c*M + m reads input channel c = o / M.  Each tap's
 * weights are contiguous in output-channel order, as the output is: channels go into vector lanes.
 *
 * Portable path: per output pixel, the kernel rows [ky0, ky1) and columns [kx0, kx1) whose taps lie
 * inside the input are found once (padded taps contribute (zp - zp) w = 0 and are skipped); per block
 * of TABULA_DW_BLOCK channels, accumulators on the stack start at the bias, every real tap adds
 * (x - input_zp)(w - weight_zp) to each, and the block is stored (TABULA_DW_STORE).
 * Every product fits int32 (|x - zp| <= 255 for int8, |x| <= 32768 for int16, |w - weight_zp| <= 255);
 * sums are modulo 2^32 (s8) / 2^64 (s16), unsigned, never undefined behaviour, and equal TOSA's
 * accumulator whenever the exact sum fits it, which the IR contract requires.
 *
 * Helium (MVE, Cortex-M55), multiplier 1, weight_zp 0, a 3x3 or (k,1) / (1,k) kernel and the vector
 * epilogue -- int8 (_s8) with every shift >= 33 (every codegen'd int8 layer); int16 (_s16 requantized,
 * _s16_s8) with tabula_dw_vec16_ok (below) and at least a quarter of the output pixels interior:
 * tabula_dw_mve16 (tabula_depthwise_conv2d_mve16.h: 16 channels per block, the input zero point folded
 * into the block's bias once per call, the requantization in vector registers).  Otherwise, with
 * weight_zp == 0, C < 65536 and KH*KW <= 256:
 * eight output channels per step in 16-bit lanes -- the input (x - input_zp for int8, fits int16; for
 * M > 1 gathered at channel o / M) and the weights are loaded widened to int16, VMULLB / VMULLT form the exact int32
 * products of the even / odd lanes and two int32x4 accumulators sum them over the pixel's real taps
 * (listed once per clipped window).  int8: the bias is added in the lanes and everything wraps modulo
 * 2^32 like the portable path; int16: each tap sum is exact in 32 bits (|x w| <= 2^22 per tap, at most
 * 256 taps: < 2^31) and is added to the 64-bit bias per channel -- or, when every bias lies in [-2^30,
 * 2^30) and every shift in [17, 46] (tabula_dw_vec16_ok: bias + sum is then exact in int32), to its low
 * word in the lanes, and 8 channels are requantized as two vectors (tabula_requant4_s16_mve: the same
 * apply_scale_16, tabula_mve.h).  Both paths give the same bits;
 * -DTABULA_PORTABLE_ONLY=1 forces the portable one.
 *
 * DSP (Cortex-M4, M7, M33: tabula_dsp.h for the lanes), with weight_zp == 0, multiplier 1 and KH*KW <= 256: four
 * channels per step; int8: input and weight words widened by SXTAB16 / SXTB16 (x - input_zp, w);
 * int16: the input's natural pairs against the widened weights, tap sums exact in 32 bits, added to
 * the 64-bit bias; SMLAxy per channel over the pixel's real taps (listed once).  Same bits as the
 * portable path, which M > 1, larger kernels and a weight zero point keep.
 *
 * requant != NULL (codegen's fused DEPTHWISE_CONV2D + RESCALE [+ CLAMP]): on both paths each channel's
 * accumulator is requantized in a register (TABULA_DW_STORE) and the TABULA_DW_OUT_T result
 * written; no accumulator tensor.
 */
#if !defined(TABULA_DW_T) || !defined(TABULA_DW_ACC_T) || !defined(TABULA_DW_UACC_T) || !defined(TABULA_DW_TO_ACC) \
    || !defined(TABULA_DW_WIDE) || !defined(TABULA_DW_OUT_T) || !defined(TABULA_DW_STORE)
#error "define TABULA_DW_T, TABULA_DW_ACC_T, TABULA_DW_UACC_T, TABULA_DW_TO_ACC, TABULA_DW_WIDE, TABULA_DW_OUT_T and TABULA_DW_STORE first"
#endif

#ifndef TABULA_DW_CROSS
#define TABULA_DW_CROSS 0
#endif

#include "tabula_dsp.h"
#include "tabula_mve.h"

/* Channels per block of the portable path's stack accumulators. */
#define TABULA_DW_BLOCK 32

/* The output's requantization: requant (NULL: write accumulators) and its zp, lo, hi read once. */
typedef struct {
    const tabula_requant *requant;
    int32_t zp, lo, hi;
    int32_t vec; /* Helium: the vector requantization -- int8: every shift >= 33 (tabula_requant4_s8_mve);
                  * int16: tabula_dw_vec16_ok (tabula_requant4_s16_mve) */
} tabula_dw_rq;

/* Write accumulator a of output channel o at output element pix + o: the accumulator itself, or
 * requantized. */
static inline void tabula_dw_put(const tabula_dw_rq *rq, TABULA_DW_ACC_T a, int32_t o, void *output, int32_t pix)
{
    TABULA_DW_STORE(output, pix + o, a, rq->requant, o, rq->zp, rq->lo, rq->hi);
}

/* The taps t in [*lo, *hi) of a k-tap window starting at i0 with dilation d that land inside
 * [0, size): 0 <= i0 + t d < size.  Empty (*lo == *hi) when none does. */
static inline void tabula_dw_taps(int32_t i0, int32_t k, int32_t d, int32_t size, int32_t *lo, int32_t *hi)
{
    const int32_t last = size - 1 - i0; /* t d <= last */
    int32_t a = i0 < 0 ? (-i0 + d - 1) / d : 0;
    int32_t b = last < 0 ? 0 : last / d + 1;
    if (b > k) {
        b = k;
    }
    if (a > b) {
        a = b;
    }
    *lo = a;
    *hi = b;
}

#include "tabula_depthwise_conv2d_fast.h"

static tabula_status tabula_dw_body(const tabula_window *win, int32_t mult, const TABULA_DW_T *input, int32_t input_zp,
                                    const int8_t *weight, int32_t weight_zp, const TABULA_DW_ACC_T *bias,
                                    const tabula_requant *requant, void *output)
{
    int32_t b, oy, ox, ky, kx, o, o0;
    int32_t n, h, w, c, oc, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    tabula_dw_rq rq = {0, 0, 0, 0, 0};
    if (!tabula_conv_window_ok(win) || mult < 1 || win->c > INT32_MAX / mult
        || input_zp < TABULA_ZP_MIN(TABULA_DW_T) || input_zp > TABULA_ZP_MAX(TABULA_DW_T)
        || weight_zp < -128 || weight_zp > 127 || (TABULA_DW_CROSS && !requant)
        || TABULA_REQUANT_INVALID_X(requant, win->c * mult, TABULA_DW_OUT_T, TABULA_DW_WIDE)) {
        return TABULA_ERR_ARG;
    }
    oc = win->c * mult;
    TABULA_WINDOW_LOCALS(win);
    if (requant) {
        rq.requant = requant;
        rq.zp = requant->output_zp; rq.lo = requant->out_min; rq.hi = requant->out_max;
    }
#if TABULA_HAVE_MVE
    if (weight_zp == 0 && c < 65536 && (int64_t)kh * kw <= TABULA_DW_FAST_TAPS) {
#if TABULA_DW_WIDE
        rq.vec = requant && tabula_dw_vec16_ok(requant, bias, c * mult);
#else
        rq.vec = requant && tabula_requant_shifts_ge33(requant, c * mult);
#endif
#if defined(TABULA_DW_MVE16)
        if (mult == 1 && rq.vec && (!TABULA_DW_WIDE || tabula_dw16_worth(win))
            && ((kh == 3 && kw == 3) || ((kh == 1 || kw == 1) && kh * kw <= TABULA_DW16_TAPS))) {
            tabula_dw_mve16(win, input, input_zp, weight, bias, requant, output);
            return TABULA_OK;
        }
#endif
        tabula_dw_fast(win, mult, input, input_zp, weight, bias, &rq, output);
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP
    if (weight_zp == 0 && mult == 1 && (int64_t)kh * kw <= TABULA_DW_FAST_TAPS) {
        tabula_dw_fast(win, input, input_zp, weight, bias, &rq, output);
        return TABULA_OK;
    }
#endif
    for (b = 0; b < n; ++b) {
        for (oy = 0; oy < oh; ++oy) {
            const int32_t iy0 = oy * sy - pt;
            int32_t ky0, ky1;
            tabula_dw_taps(iy0, kh, dy, h, &ky0, &ky1);
            for (ox = 0; ox < ow; ++ox) {
                const int32_t ix0 = ox * sx - pl;
                const int32_t pix = ((b * oh + oy) * ow + ox) * oc;
                int32_t kx0, kx1;
                tabula_dw_taps(ix0, kw, dx, w, &kx0, &kx1);
                for (o0 = 0; o0 < oc; o0 += TABULA_DW_BLOCK) {
                    const int32_t nb = oc - o0 < TABULA_DW_BLOCK ? oc - o0 : TABULA_DW_BLOCK;
                    TABULA_DW_UACC_T acc[TABULA_DW_BLOCK];
                    for (o = 0; o < nb; ++o) {
                        acc[o] = bias ? (TABULA_DW_UACC_T)bias[o0 + o] : 0u;
                    }
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            const TABULA_DW_T *xp = input + ((b * h + iy0 + ky * dy) * w + ix0 + kx * dx) * c;
                            const int8_t *wp = weight + (ky * kw + kx) * oc + o0;
                            if (mult == 1) {
                                xp += o0;
                                for (o = 0; o < nb; ++o) {
                                    const int32_t t = ((int32_t)xp[o] - input_zp) * ((int32_t)wp[o] - weight_zp);
                                    acc[o] += (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)t;
                                }
                            } else { /* output channel o0 + o reads input channel (o0 + o) / M */
                                int32_t i = o0 / mult, j = o0 % mult;
                                for (o = 0; o < nb; ++o) {
                                    const int32_t t = ((int32_t)xp[i] - input_zp) * ((int32_t)wp[o] - weight_zp);
                                    acc[o] += (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)t;
                                    if (++j == mult) {
                                        j = 0;
                                        ++i;
                                    }
                                }
                            }
                        }
                    }
                    for (o = 0; o < nb; ++o) {
                        tabula_dw_put(&rq, TABULA_DW_TO_ACC(acc[o]), o0 + o, output, pix);
                    }
                }
            }
        }
    }
    return TABULA_OK;
}
