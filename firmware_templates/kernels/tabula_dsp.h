/*
 * DSP-extension helpers (Cortex-M4, M7, M33: SXTB16 / SXTAB16 widen the even and odd bytes of a word
 * into two 16-bit lanes, SMLAD adds both lanes' products to an accumulator, SMLABB / SMLATT one lane's)
 * shared by the DSP paths of the accumulator kernels, which live beside their kernels:
 * conv2d/tabula_conv2d_dsp.h, fully_connected/tabula_fully_connected_dsp.h,
 * depthwise_conv2d/tabula_depthwise_conv2d_dsp.h.  Private to the kernel sources (static inline;
 * compiled only where tabula_internal.h sets TABULA_HAVE_DSP: __ARM_FEATURE_DSP, no MVE, not
 * TABULA_PORTABLE_ONLY).  Each kernel function keeps its portable path and calls its DSP path from an
 * `#elif TABULA_HAVE_DSP` beside its Helium one; both give the same bits.
 *
 * Arithmetic: every value is widened as x + k with k = -zero_point in both lanes (SXTAB16), so the lanes
 * hold x - input_zp and w - weight_zp exactly (|.| <= 255, int16); each product is exact, and SMLAD /
 * SMLABB / SMLATT keep the low 32 bits of the sum (they only set the sticky Q flag on overflow): the
 * accumulator is the portable path's, modulo 2^32.  Padded taps hold x - zp = 0 (CONV2D's patch) or
 * are skipped (DEPTHWISE), so they contribute nothing, as on the portable path.  Any input_zp;
 * CONV2D and DEPTHWISE take weight_zp == 0 (symmetric weights, what tabula's quantizer emits; the
 * kernels keep the portable path otherwise), FULLY_CONNECTED any weight_zp.  int16 activations
 * (a16w8) accumulate with SMLALD into 64 bits (the int16 section below) or, DEPTHWISE, in exact 32-bit
 * tap sums added to the 64-bit bias.
 *
 * A word of four int8 b0..b3 (lowest address first) widens to the lanes [b0, b2] (SXTAB16) and
 * [b1, b3] (SXTAB16 ROR #8); SMLAD of two such words sums b0 c0 + b2 c2, of the other two b1 c1 +
 * b3 c3.  So a dot product needs no reordering as long as both sides are widened the same way: the
 * CONV2D patch is stored in that order once per pixel and the weights are widened on load.
 */
#ifndef TABULA_DSP_H
#define TABULA_DSP_H

#include "tabula_requant.h"

#if TABULA_HAVE_DSP
#include <arm_acle.h>
#include <string.h>

/* Four int8 from p (any alignment: LDR on Armv7E-M / Armv8-M Mainline allows unaligned words). */
static inline int32_t tabula_dsp_ld4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Lanes [b0 + k, b2 + k] of the bytes of v (k2: the 16-bit k in both halves). */
static inline int32_t tabula_dsp_even(int32_t k2, int32_t v)
{
    return __sxtab16(k2, v);
}

/* v rotated right by 8 bits: its bytes b1, b2, b3, b0 (the odd bytes in the even places). */
static inline int32_t tabula_dsp_ror8(int32_t v)
{
    const uint32_t u = (uint32_t)v;
    return tabula_u32_to_s32((u >> 8) | (u << 24));
}

/* Lanes [b1 + k, b3 + k] of the bytes of v. */
static inline int32_t tabula_dsp_odd(int32_t k2, int32_t v)
{
#if TABULA_USE_ASM
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(k2), "r"(v));
    return r;
#else
    return __sxtab16(k2, tabula_dsp_ror8(v));
#endif
}

/* -zp in both 16-bit lanes (|zp| <= 128: -zp fits int16). */
static inline int32_t tabula_dsp_k2(int32_t zp)
{
    const uint32_t k = (uint32_t)(-zp) & 0xFFFFu;
    return (int32_t)(k | (k << 16));
}

/* The 4-channel blocks of the DSP paths (tabula_dsp_fc_quad, tabula_dw_dsp_quad, tabula_dsp_conv_block):
 * their accumulators a[0..3] start at the bias of channels o .. o + 3 (0 without one), are kept in the
 * registers a0 .. a3 across the loop and written back.  (Macros: as inline functions the kernels compile
 * differently.) */
#define TABULA_DSP_BIAS4(a, bias, o)                                                                      \
    do {                                                                                                  \
        (a)[0] = (bias) ? (bias)[o] : 0;                                                                  \
        (a)[1] = (bias) ? (bias)[(o) + 1] : 0;                                                            \
        (a)[2] = (bias) ? (bias)[(o) + 2] : 0;                                                            \
        (a)[3] = (bias) ? (bias)[(o) + 3] : 0;                                                            \
    } while (0)

#define TABULA_DSP_PUT4(a, a0, a1, a2, a3)                                                                \
    do {                                                                                                  \
        (a)[0] = (a0);                                                                                    \
        (a)[1] = (a1);                                                                                    \
        (a)[2] = (a2);                                                                                    \
        (a)[3] = (a3);                                                                                    \
    } while (0)

/* The DSP paths' epilogue kinds (ge33 below): 0 the general requantization, 1 every shift of the out_c
 * channels >= 33 (tabula_requantize32's 32-bit branch, no test), TABULA_DSP_RQ8 that and the whole int8
 * range (out_min -128, out_max 127: the clamp is one SSAT, tabula_dsp_rq8).  rq NULL: 0. */
#define TABULA_DSP_RQ8 2

static inline int32_t tabula_dsp_epilogue(const tabula_requant *rq, int32_t out_c)
{
    /* tabula_requant_shifts_ge33 without a branch per channel: the shifts of a checked block are in
     * [2, 62], so s - 33 is negative exactly when s < 33; the OR of them all, 4 channels a step */
    const int32_t *sp;
    int32_t o, neg = 0;
    if (!rq) {
        return 0;
    }
    sp = tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 1;
    for (o = 0; o + 4 <= out_c; o += 4, sp += 8) {
        neg |= (sp[0] - 33) | (sp[2] - 33) | (sp[4] - 33) | (sp[6] - 33);
    }
    for (; o < out_c; ++o, sp += 2) {
        neg |= sp[0] - 33;
    }
    if (neg < 0) {
        return 0;
    }
    return rq->out_min == -128 && rq->out_max == 127 ? TABULA_DSP_RQ8 : 1;
}

/* acc requantized by multiplier m and shift s (33 <= s <= 62) with output zero point zp into the whole
 * int8 range: tabula_requantize32(acc, m, s, zp, -128, 127, 1), the same bits (the clamp to [-128, 127]
 * is SSAT #8; |hi32(acc m) >> (s - 33)| < 2^30, so the sum cannot overflow first). */
static inline int32_t tabula_dsp_rq8(int32_t acc, int32_t m, int32_t s, int32_t zp)
{
    const int32_t t = tabula_asr32((int32_t)tabula_asr64((int64_t)acc * m, 32), s - 33);
    const int32_t v = tabula_asr32(t + 1, 1) + zp;
    int32_t r;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(v));
    return r;
}

/* The DSP paths' store: tabula_store_acc32's, with ge33 (every shift >= 33) and the block's absence
 * tested first, a function of its own as the DSP stores were (so they compile as they did). */
static inline void tabula_dsp_store_acc32(const tabula_requant *rq, int32_t ge33, int32_t zp, int32_t lo, int32_t hi,
                                          int32_t acc, int32_t o, void *y)
{
    if (!rq) {
        ((int32_t *)y)[o] = acc;
    } else {
        TABULA_STORE_ACC32(y, o, acc, rq, o, zp, lo, hi, ge33);
    }
}

/* Four consecutive output channels o .. o + 3 (accumulators a) into y: int32 (rq NULL) or requantized
 * to int8 (ge33: tabula_dsp_epilogue's kind; 1: every shift >= 33, the 32-bit requantization without a
 * test; TABULA_DSP_RQ8: that and SSAT, tabula_dsp_rq8), tabula_store_acc32's stores.
 * Not inlined: the callers' loops keep their registers. */
__attribute__((noinline, unused)) static void tabula_dsp_store4(const tabula_requant *rq, int32_t ge33,
                                                                const int32_t a[4], int32_t o, void *y)
{
    const int32_t zp = rq ? rq->output_zp : 0, lo = rq ? rq->out_min : 0, hi = rq ? rq->out_max : 0;
    if (rq && ge33 == TABULA_DSP_RQ8) {
        const int32_t *ms = tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * o;
        int8_t *out = (int8_t *)y + o;
        out[0] = (int8_t)tabula_dsp_rq8(a[0], ms[0], ms[1], zp);
        out[1] = (int8_t)tabula_dsp_rq8(a[1], ms[2], ms[3], zp);
        out[2] = (int8_t)tabula_dsp_rq8(a[2], ms[4], ms[5], zp);
        out[3] = (int8_t)tabula_dsp_rq8(a[3], ms[6], ms[7], zp);
    } else if (rq && ge33) {
        const int32_t *ms = tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * o;
        int8_t *out = (int8_t *)y + o;
        out[0] = (int8_t)tabula_requantize32(a[0], ms[0], ms[1], zp, lo, hi, 1);
        out[1] = (int8_t)tabula_requantize32(a[1], ms[2], ms[3], zp, lo, hi, 1);
        out[2] = (int8_t)tabula_requantize32(a[2], ms[4], ms[5], zp, lo, hi, 1);
        out[3] = (int8_t)tabula_requantize32(a[3], ms[6], ms[7], zp, lo, hi, 1);
    } else {
        int32_t i;
        for (i = 0; i < 4; ++i) {
            tabula_dsp_store_acc32(rq, ge33, zp, lo, hi, a[i], o + i, y);
        }
    }
}

/* ---- int16 activations x int8 weights (a16w8): CONV2D and FULLY_CONNECTED -----------------------
 * int16 inputs are symmetric (no zero point).  The receptive field of one pixel (CONV2D) or one input
 * row (FULLY_CONNECTED) is stored once as words [x0, x2], [x1, x3] per 4 values (PKHBT / PKHTB of the
 * natural pairs: the order SXTB16 / SXTB16 ROR 8 give the weights), the K % 4 values at the end one
 * per word; then two output channels at a time (weight_zp == 0), each pair of 16-bit products added
 * to a 64-bit accumulator by SMLALD (modulo 2^64, like the portable path: the same bits; every product
 * |x w| <= 2^22 is exact). */

/* Words [x0, x2], [x1, x3] of the 4 int16 at src (any 2-byte alignment) at dst[0], dst[1]. */
static inline void tabula_dsp_pack16(const int16_t *src, int32_t *dst)
{
    uint32_t a, b;
    memcpy(&a, src, 4);
    memcpy(&b, src + 2, 4);
    dst[0] = (int32_t)((a & 0xFFFFu) | (b << 16));
    dst[1] = (int32_t)((a >> 16) | (b & 0xFFFF0000u));
}

/* Widen len int16 values at src into dst (2 words per 4, then one per value). */
static inline void tabula_dsp_pack16_row(const int16_t *src, int32_t len, int32_t *dst)
{
    const int32_t groups = len >> 2;
    int32_t g, j;
    for (g = 0; g < groups; ++g) {
        tabula_dsp_pack16(src + 4 * g, dst + 2 * g);
    }
    for (j = 4 * groups; j < len; ++j) {
        dst[2 * groups + (j - 4 * groups)] = src[j];
    }
}

/* acc[i] += sum_j x[j] w_i[j] (64-bit, modulo 2^64) over the len values of the packed row xw, for two
 * weight rows: w0 and w0 + w1off (weight_zp 0).  Not inlined: its loop takes 13 registers. */
__attribute__((noinline, unused)) static void tabula_dsp_dot2_s16(const int32_t *xw, const int8_t *w0, int32_t w1off,
                                                                  int32_t len, int64_t acc[2])
{
    uint32_t l0 = (uint32_t)(uint64_t)acc[0], h0 = (uint32_t)((uint64_t)acc[0] >> 32);
    uint32_t l1 = (uint32_t)(uint64_t)acc[1], h1 = (uint32_t)((uint64_t)acc[1] >> 32);
    const int32_t *p = xw;
    int32_t n = len >> 2, j;
    if (n > 0) {
#if TABULA_USE_ASM
        int32_t t0, t1, t2, x0, x1;
        __asm__ volatile(
            "1:\n\t"
            "ldr    %[t0], [%[w], %[off]]\n\t"
            "ldr    %[t1], [%[w]], #4\n\t"
            "ldrd   %[x0], %[x1], [%[p]], #8\n\t"
            "sxtb16 %[t2], %[t1]\n\t"
            "sxtb16 %[t1], %[t1], ror #8\n\t"
            "smlald %[l0], %[h0], %[x0], %[t2]\n\t"
            "smlald %[l0], %[h0], %[x1], %[t1]\n\t"
            "sxtb16 %[t2], %[t0]\n\t"
            "sxtb16 %[t0], %[t0], ror #8\n\t"
            "smlald %[l1], %[h1], %[x0], %[t2]\n\t"
            "smlald %[l1], %[h1], %[x1], %[t0]\n\t"
            "subs   %[n], %[n], #1\n\t"
            "bne    1b"
            : [l0] "+r"(l0), [h0] "+r"(h0), [l1] "+r"(l1), [h1] "+r"(h1), [p] "+r"(p), [w] "+r"(w0), [n] "+r"(n),
              [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [x0] "=&r"(x0), [x1] "=&r"(x1)
            : [off] "r"(w1off)
            : "memory", "cc");
#else /* the C twin: the same SMLALD sums */
        int64_t s0 = tabula_u64_to_s64(((uint64_t)h0 << 32) | l0), s1 = tabula_u64_to_s64(((uint64_t)h1 << 32) | l1);
        for (; n > 0; --n, p += 2, w0 += 4) {
            const int32_t v0 = tabula_dsp_ld4(w0), v1 = tabula_dsp_ld4(w0 + w1off);
            s0 = __smlald(p[0], __sxtb16(v0), s0);
            s0 = __smlald(p[1], __sxtb16(tabula_dsp_ror8(v0)), s0);
            s1 = __smlald(p[0], __sxtb16(v1), s1);
            s1 = __smlald(p[1], __sxtb16(tabula_dsp_ror8(v1)), s1);
        }
        l0 = (uint32_t)(uint64_t)s0; h0 = (uint32_t)((uint64_t)s0 >> 32);
        l1 = (uint32_t)(uint64_t)s1; h1 = (uint32_t)((uint64_t)s1 >> 32);
#endif
    }
    acc[0] = tabula_u64_to_s64(((uint64_t)h0 << 32) | l0);
    acc[1] = tabula_u64_to_s64(((uint64_t)h1 << 32) | l1);
    for (j = 0; j < (len & 3); ++j) {
        acc[0] = tabula_u64_to_s64((uint64_t)acc[0] + (uint64_t)(int64_t)(p[j] * (int32_t)w0[j]));
        acc[1] = tabula_u64_to_s64((uint64_t)acc[1] + (uint64_t)(int64_t)(p[j] * (int32_t)w0[j + w1off]));
    }
}

/* Two rows (o, o1: o1 == o for a last odd one) of the packed row xw: bias, dot products, outputs at
 * idx0 + o and idx0 + o1. */
static inline void tabula_dsp_rows2_s16(const int32_t *xw, int32_t len, const int8_t *weight, int32_t o, int32_t o1,
                                        const int64_t *bias, const tabula_requant *rq, int32_t zp, int32_t lo,
                                        int32_t hi, void *output, int32_t idx0)
{
    int64_t acc[2];
    acc[0] = bias ? bias[o] : 0;
    acc[1] = bias ? bias[o1] : 0;
    tabula_dsp_dot2_s16(xw, weight + o * len, (o1 - o) * len, len, acc);
    tabula_store_acc48(output, idx0 + o, acc[0], rq, o, zp, lo, hi);
    if (o1 != o) {
        tabula_store_acc48(output, idx0 + o1, acc[1], rq, o1, zp, lo, hi);
    }
}
#endif /* TABULA_HAVE_DSP */

#endif /* TABULA_DSP_H */
