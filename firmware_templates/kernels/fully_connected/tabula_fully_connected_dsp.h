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

#if TABULA_USE_ASM
/* One group of 4 inputs: the widened input's 2 words (LDRD), per row its weight word (LDR), 2 SXTB16,
 * 2 SMLAD: 21 instructions per 16 MACs; four groups per loop pass (86 per 64 MACs), the last n % 4
 * one a pass (TABULA_DSP_FC_SUMS: a0 .. a3 += rows w0, w0 + stride, w2 = w0 + 2 stride, w2 + stride
 * times xw over n groups; all advanced). */
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
#define TABULA_DSP_FC_SUMS()                                                                              \
    do {                                                                                                  \
        int32_t xe, xo, v, t, n4 = n >> 2, nr = n & 3;                                                    \
        if (n4 > 0) {                                                                                     \
            __asm__ volatile("1:\n\t" TABULA_DSP_FC_GROUP TABULA_DSP_FC_GROUP TABULA_DSP_FC_GROUP         \
                             TABULA_DSP_FC_GROUP "subs   %[n], %[n], #1\n\t"                               \
                             "bne    1b"                                                                  \
                             : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xw] "+r"(xw),   \
                               [w0] "+r"(w0), [w2] "+r"(w2), [n] "+r"(n4), [xe] "=&r"(xe), [xo] "=&r"(xo),  \
                               [v] "=&r"(v), [t] "=&r"(t)                                                 \
                             : [k] "r"(stride)                                                            \
                             : "memory", "cc");                                                           \
        }                                                                                                 \
        if (nr > 0) {                                                                                     \
            __asm__ volatile("1:\n\t" TABULA_DSP_FC_GROUP "subs   %[n], %[n], #1\n\t"                     \
                             "bne    1b"                                                                  \
                             : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xw] "+r"(xw),   \
                               [w0] "+r"(w0), [w2] "+r"(w2), [n] "+r"(nr), [xe] "=&r"(xe), [xo] "=&r"(xo),  \
                               [v] "=&r"(v), [t] "=&r"(t)                                                 \
                             : [k] "r"(stride)                                                            \
                             : "memory", "cc");                                                           \
        }                                                                                                 \
    } while (0)
#endif

/* Rows 0..3 (w0: row 0, row r at w0 + r * stride) times the widened input xw (n >= 1 groups of 4), added
 * to a[0..3].  Not inlined: its loop takes 13 registers, which only a function of its own always has. */
__attribute__((noinline)) static void tabula_dsp_fc_quad(const int32_t *xw, const int8_t *w0, int32_t stride, int32_t n,
                                                        int32_t a[4])
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const int8_t *w2 = w0 + 2 * stride;
#if TABULA_USE_ASM
    TABULA_DSP_FC_SUMS();
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
    TABULA_DSP_PUT4(a, a0, a1, a2, a3);
}

/* Every block of 4 rows of a TABULA_DSP_RQ8 block (nq blocks from row 0; in_c % 4 == 0, n = in_c / 4
 * groups): the bias, tabula_dsp_fc_quad's sums and the four outputs out[o .. o + 3] by tabula_dsp_rq8,
 * in one function (not inlined: the loop's 13 registers). */
__attribute__((noinline)) static void tabula_dsp_fc_quads_rq8(const int32_t *xw0, const int8_t *weight, int32_t in_c,
                                                             int32_t nq, const int32_t *bias, const tabula_requant *rq,
                                                             int8_t *out)
{
    const int32_t zp = rq->output_zp, n0 = in_c >> 2, stride = in_c;
    const int32_t *ms = tabula_requant_words(rq) + TABULA_REQUANT_HEAD;
    int32_t q;
#if TABULA_USE_ASM
    if (bias && (in_c & 15) == 0 && nq > 0) {
        /* in_c % 16 == 0: every block in one assembly loop, its pointers and counter in stack slots
         * ("m" operands, read and written back once per block): the bias (2 LDRD), the sums (4 groups a
         * pass), the four outputs tabula_dsp_rq8's way (LDRD m, s; SMMUL = hi32(acc m); ASR s - 33; +1;
         * ASR 1 + zp; SSAT #8; STRB: 8 instructions each) */
        const int32_t *bp = bias;
        const int8_t *w0 = weight, *w2 = weight + 2 * stride;
        const int32_t *xw = xw0;
        int32_t a0, a1, a2, a3, xe, xo, v, t, n, k = stride, qn = nq;
#define TABULA_DSP_FC_RQ8(acc)                                                                            \
    "ldrd   %[xe], %[xo], [%[t]], #8\n\t"                                                                 \
    "sub    %[xo], %[xo], #33\n\t"                                                                        \
    "smmul  %[xe], %[" acc "], %[xe]\n\t"                                                                 \
    "asr    %[xe], %[xe], %[xo]\n\t"                                                                      \
    "add    %[xe], %[xe], #1\n\t"                                                                         \
    "add    %[xe], %[v], %[xe], asr #1\n\t"                                                               \
    "ssat   %[xe], #8, %[xe]\n\t"                                                                         \
    "strb   %[xe], [%[n]], #1\n\t"
        __asm__ volatile(
            "2:\n\t"
            "ldr    %[t], %[bm]\n\t"
            "ldrd   %[a0], %[a1], [%[t]], #8\n\t"
            "ldrd   %[a2], %[a3], [%[t]], #8\n\t"
            "str    %[t], %[bm]\n\t"
            "lsr    %[n], %[k], #4\n\t"
            "1:\n\t"
            TABULA_DSP_FC_GROUP TABULA_DSP_FC_GROUP TABULA_DSP_FC_GROUP TABULA_DSP_FC_GROUP
            "subs   %[n], %[n], #1\n\t"
            "bne    1b\n\t"
            "ldr    %[t], %[msm]\n\t"
            "ldr    %[v], %[zpm]\n\t"
            "ldr    %[n], %[outm]\n\t"
            TABULA_DSP_FC_RQ8("a0") TABULA_DSP_FC_RQ8("a1") TABULA_DSP_FC_RQ8("a2") TABULA_DSP_FC_RQ8("a3")
            "str    %[t], %[msm]\n\t"
            "str    %[n], %[outm]\n\t"
            "sub    %[xw], %[xw], %[k], lsl #1\n\t"
            "add    %[w0], %[w2], %[k]\n\t"
            "add    %[w2], %[w0], %[k], lsl #1\n\t"
            "ldr    %[t], %[qm]\n\t"
            "subs   %[t], %[t], #1\n\t"
            "str    %[t], %[qm]\n\t"
            "bne    2b"
            : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [xw] "+r"(xw), [w0] "+r"(w0),
              [w2] "+r"(w2), [n] "=&r"(n), [xe] "=&r"(xe), [xo] "=&r"(xo), [v] "=&r"(v), [t] "=&r"(t), [k] "+r"(k),
              [bm] "+m"(bp), [msm] "+m"(ms), [outm] "+m"(out), [qm] "+m"(qn)
            : [zpm] "m"(zp)
            : "memory", "cc");
#undef TABULA_DSP_FC_RQ8
        return;
    }
#endif
    for (q = 0; q < nq; ++q, ms += 8, out += 4) {
        int32_t a0 = bias ? bias[4 * q] : 0, a1 = bias ? bias[4 * q + 1] : 0;
        int32_t a2 = bias ? bias[4 * q + 2] : 0, a3 = bias ? bias[4 * q + 3] : 0;
        const int8_t *w0 = weight + 4 * q * in_c, *w2 = w0 + 2 * stride;
        const int32_t *xw = xw0;
        int32_t n = n0;
#if TABULA_USE_ASM
        TABULA_DSP_FC_SUMS();
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
        out[0] = (int8_t)tabula_dsp_rq8(a0, ms[0], ms[1], zp);
        out[1] = (int8_t)tabula_dsp_rq8(a1, ms[2], ms[3], zp);
        out[2] = (int8_t)tabula_dsp_rq8(a2, ms[4], ms[5], zp);
        out[3] = (int8_t)tabula_dsp_rq8(a3, ms[6], ms[7], zp);
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
            if (rq8) { /* the 4-row blocks requantized in one function */
                tabula_dsp_fc_quads_rq8(xw, weight, in_c, out_c >> 2, bias, rq, (int8_t *)y);
                o = out_c & ~3;
            }
            for (; o + 4 <= out_c; o += 4) {
                const int8_t *w0 = weight + o * in_c;
                int32_t a[4];
                TABULA_DSP_BIAS4(a, bias, o);
                tabula_dsp_fc_quad(xw, w0, in_c, groups, a);
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
