/*
 * The DSP-extension paths of FULLY_CONNECTED (Cortex-M4, M7, M33; the lanes and the arithmetic:
 * tabula_dsp.h): tabula_fully_connected_s8 (tabula_dsp_fully_connected_s8) and
 * tabula_fully_connected_s16 (tabula_dsp_fully_connected_s16).  Private to fully_connected/;
 * compiled where TABULA_HAVE_DSP.
 */
#ifndef TABULA_FULLY_CONNECTED_DSP_H
#define TABULA_FULLY_CONNECTED_DSP_H

#include "tabula_dsp.h"

#if TABULA_HAVE_DSP

/* ---- FULLY_CONNECTED ----------------------------------------------------------------------------
 * With weight_zp == 0 and in_c <= TABULA_DSP_FC_MAX, each batch row's input is widened once (x -
 * input_zp, words [v0, v2], [v1, v3] per 4 values, on the stack) and four weight rows at a time are
 * multiplied into four accumulators: per 4 inputs one LDRD of the widened input, per row one weight
 * word widened (2 SXTB16) and 2 SMLAD (23 instructions per 16 MACs with the loop).  Otherwise, and
 * for the last out_c % 4 rows, each input word is widened as it is read (SXTAB16 with -input_zp, the
 * weights with -weight_zp).  The last in_c % 4 values are scalar. */
#define TABULA_DSP_FC_MAX 2048

/* Rows 0..3 (w0: row 0, row r at w0 + r * stride) times the widened input xw (n >= 1 groups of 4), added
 * to a[0..3]; with ms (the rows' {multiplier, shift} words of a TABULA_DSP_RQ8 block, output zero point
 * zp) the sums are requantized into out[0..3] instead (tabula_dsp_rq8: no in_c % 4 tail may follow).
 * Not inlined: its loop takes 13 registers, which only a function of its own always has. */
__attribute__((noinline)) static void tabula_dsp_fc_quad(const int32_t *xw, const int8_t *w0, int32_t stride, int32_t n,
                                                        int32_t a[4], const int32_t *ms, int32_t zp, int8_t *out)
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const int8_t *w2 = w0 + 2 * stride;
#if TABULA_USE_ASM
    /* One group of 4 inputs: the widened input's 2 words (LDRD), per row its weight word (LDR), 2 SXTB16,
     * 2 SMLAD: 21 instructions per 16 MACs; two groups per loop pass (44 per 32 MACs), an odd last one
     * alone. */
#define TABULA_DSP_FC_GROUP                                                                               \
    "ldrd   %[xe], %[xo], [%[xw]], #8\n\t"                                                                \
    "ldr    %[v], [%[w0], %[k]]\n\t"                                                                      \
    "sxtb16 %[t], %[v]\n\t"                                                                               \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                       \
    "smlad  %[a1], %[xe], %[t], %[a1]\n\t"                                                                \
    "smlad  %[a1], %[xo], %[v], %[a1]\n\t"                                                                \
    "ldr    %[v], [%[w0]], #4\n\t"                                                                        \
    "sxtb16 %[t], %[v]\n\t"                                                                               \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                       \
    "smlad  %[a0], %[xe], %[t], %[a0]\n\t"                                                                \
    "smlad  %[a0], %[xo], %[v], %[a0]\n\t"                                                                \
    "ldr    %[v], [%[w2], %[k]]\n\t"                                                                      \
    "sxtb16 %[t], %[v]\n\t"                                                                               \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                       \
    "smlad  %[a3], %[xe], %[t], %[a3]\n\t"                                                                \
    "smlad  %[a3], %[xo], %[v], %[a3]\n\t"                                                                \
    "ldr    %[v], [%[w2]], #4\n\t"                                                                        \
    "sxtb16 %[t], %[v]\n\t"                                                                               \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                       \
    "smlad  %[a2], %[xe], %[t], %[a2]\n\t"                                                                \
    "smlad  %[a2], %[xo], %[v], %[a2]\n\t"
    int32_t xe, xo, v, t, n2 = n >> 1;
    if (n2 > 0) {
        __asm__ volatile(
            "1:\n\t"
            TABULA_DSP_FC_GROUP
            TABULA_DSP_FC_GROUP
            "subs   %[n2], %[n2], #1\n\t"
            "bne    1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xw] "+r"(xw), [w0] "+r"(w0), [w2] "+r"(w2),
              [n2] "+r"(n2), [xe] "=&r"(xe), [xo] "=&r"(xo), [v] "=&r"(v), [t] "=&r"(t)
            : [k] "r"(stride)
            : "memory", "cc");
    }
    if (n & 1) {
        __asm__ volatile(
            TABULA_DSP_FC_GROUP
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xw] "+r"(xw), [w0] "+r"(w0), [w2] "+r"(w2),
              [xe] "=&r"(xe), [xo] "=&r"(xo), [v] "=&r"(v), [t] "=&r"(t)
            : [k] "r"(stride)
            : "memory");
    }
#undef TABULA_DSP_FC_GROUP
#else /* the C twin: the same SMLAD sums */
    for (; n > 0; --n, xw += 2, w0 += 4, w2 += 4) {
        const int32_t r0 = tabula_dsp_ld4(w0), r1 = tabula_dsp_ld4(w0 + stride);
        const int32_t r2 = tabula_dsp_ld4(w2), r3 = tabula_dsp_ld4(w2 + stride);
        a0 = __smlad(xw[1], __sxtb16(tabula_dsp_ror8(r0)), __smlad(xw[0], __sxtb16(r0), a0));
        a1 = __smlad(xw[1], __sxtb16(tabula_dsp_ror8(r1)), __smlad(xw[0], __sxtb16(r1), a1));
        a2 = __smlad(xw[1], __sxtb16(tabula_dsp_ror8(r2)), __smlad(xw[0], __sxtb16(r2), a2));
        a3 = __smlad(xw[1], __sxtb16(tabula_dsp_ror8(r3)), __smlad(xw[0], __sxtb16(r3), a3));
    }
#endif
    if (ms) {
        out[0] = (int8_t)tabula_dsp_rq8(a0, ms[0], ms[1], zp);
        out[1] = (int8_t)tabula_dsp_rq8(a1, ms[2], ms[3], zp);
        out[2] = (int8_t)tabula_dsp_rq8(a2, ms[4], ms[5], zp);
        out[3] = (int8_t)tabula_dsp_rq8(a3, ms[6], ms[7], zp);
    } else {
        TABULA_DSP_PUT4(a, a0, a1, a2, a3);
    }
}

static inline void tabula_dsp_fully_connected_s8(int32_t n, int32_t in_c, int32_t out_c, const int8_t *input,
                                                 int32_t input_zp, const int8_t *weight, int32_t weight_zp,
                                                 const int32_t *bias, const tabula_requant *rq, void *output)
{
    int32_t xw[TABULA_DSP_FC_MAX / 2]; /* the widened input: 2 words per 4 values */
    const int32_t kx2 = tabula_dsp_k2(input_zp), kw2 = tabula_dsp_k2(weight_zp);
    const int32_t groups = in_c >> 2, body = in_c & ~3;
    const int32_t packed = weight_zp == 0 && groups > 0 && in_c <= TABULA_DSP_FC_MAX;
    const int32_t rq_zp = rq ? rq->output_zp : 0, rq_lo = rq ? rq->out_min : 0, rq_hi = rq ? rq->out_max : 0;
    const int32_t ge33 = tabula_dsp_epilogue(rq, out_c), esize = rq ? 1 : 4;
    const int32_t rq8 = ge33 == TABULA_DSP_RQ8 && (in_c & 3) == 0;
    int32_t b, o, j, g;
    for (b = 0; b < n; ++b) {
        const int8_t *xp = input + b * in_c;
        void *const y = (int8_t *)output + b * out_c * esize; /* the row's first output element */
        o = 0;
        if (packed) {
            for (g = 0; g < groups; ++g) {
                const int32_t u = tabula_dsp_ld4(xp + 4 * g);
                xw[2 * g] = tabula_dsp_even(kx2, u);
                xw[2 * g + 1] = tabula_dsp_odd(kx2, u);
            }
            for (; o + 4 <= out_c; o += 4) {
                const int8_t *w0 = weight + o * in_c;
                int32_t a[4];
                TABULA_DSP_BIAS4(a, bias, o);
                if (rq8) { /* requantized in the block */
                    tabula_dsp_fc_quad(xw, w0, in_c, groups, a, tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * o,
                                       rq_zp, (int8_t *)y + o);
                    continue;
                }
                tabula_dsp_fc_quad(xw, w0, in_c, groups, a, 0, 0, 0);
                for (j = body; j < in_c; ++j) {
                    const uint32_t xv = (uint32_t)((int32_t)xp[j] - input_zp);
                    a[0] = (int32_t)((uint32_t)a[0] + xv * (uint32_t)(int32_t)w0[j]);
                    a[1] = (int32_t)((uint32_t)a[1] + xv * (uint32_t)(int32_t)w0[j + in_c]);
                    a[2] = (int32_t)((uint32_t)a[2] + xv * (uint32_t)(int32_t)w0[j + 2 * in_c]);
                    a[3] = (int32_t)((uint32_t)a[3] + xv * (uint32_t)(int32_t)w0[j + 3 * in_c]);
                }
                tabula_dsp_store4(rq, ge33, a, o, y);
            }
        }
        for (; o < out_c; ++o) {
            const int8_t *w0 = weight + o * in_c;
            int32_t a0 = bias ? bias[o] : 0;
            for (g = 0; g < groups; ++g) {
                const int32_t u = tabula_dsp_ld4(xp + 4 * g), v = tabula_dsp_ld4(w0 + 4 * g);
                a0 = __smlad(tabula_dsp_even(kx2, u), tabula_dsp_even(kw2, v), a0);
                a0 = __smlad(tabula_dsp_odd(kx2, u), tabula_dsp_odd(kw2, v), a0);
            }
            for (j = body; j < in_c; ++j) {
                a0 = (int32_t)((uint32_t)a0 + (uint32_t)((int32_t)xp[j] - input_zp) * (uint32_t)((int32_t)w0[j] - weight_zp));
            }
            tabula_dsp_store_acc32(rq, ge33, rq_zp, rq_lo, rq_hi, a0, o, y);
        }
    }
}

/* FULLY_CONNECTED int16 x int8 on the DSP path (weight_zp == 0, in_c <= TABULA_DSP_FC_MAX): each input
 * row packed once, then two weight rows per tabula_dsp_dot2_s16. */
static inline void tabula_dsp_fully_connected_s16(int32_t n, int32_t in_c, int32_t out_c, const int16_t *input,
                                                  const int8_t *weight, const int64_t *bias,
                                                  const tabula_requant *rq, void *output)
{
    int32_t xw[TABULA_DSP_FC_MAX / 2 + 4];
    const int32_t rq_zp = rq ? rq->output_zp : 0, rq_lo = rq ? rq->out_min : 0, rq_hi = rq ? rq->out_max : 0;
    int32_t b, o;
    for (b = 0; b < n; ++b) {
        tabula_dsp_pack16_row(input + b * in_c, in_c, xw);
        for (o = 0; o < out_c; o += 2) {
            tabula_dsp_rows2_s16(xw, in_c, weight, o, o + 1 < out_c ? o + 1 : o, bias, rq, rq_zp, rq_lo, rq_hi,
                                 output, b * out_c);
        }
    }
}
#endif /* TABULA_HAVE_DSP */

#endif /* TABULA_FULLY_CONNECTED_DSP_H */
