/*
 * The Helium (MVE) int8 GEMM / GEMV of FULLY_CONNECTED (tabula_fully_connected_impl.h, int8) and of CONV2D
 * with the input zero point folded into the bias (conv2d/tabula_conv2d_s8_folded.c): int8 rows against
 * every output channel's weight row, 4 channels per pass, the int32 accumulators requantized by the
 * vector epilogue (tabula_mve.h).  Private to those sources; compiled where TABULA_HAVE_MVE.
 */
#ifndef TABULA_GEMM_S8_MVE_H
#define TABULA_GEMM_S8_MVE_H

#include <string.h>

#include "tabula_mve.h"

#if TABULA_HAVE_MVE

/* What both assembly loops below share: 4 int32 accumulators a0..a3 in even registers (the "Te"
 * constraint: VMLADAVA's RdaLo), the row length len as input, the loop counter LR (DLS / LE) and q0-q3
 * clobbered, and the step to the next block of channels (n blocks left). */
#define TABULA_GEMV_ASM_ACC4 [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3)
#define TABULA_GEMV_ASM_LEN [len] "r"(len) : "lr", "q0", "q1", "q2", "q3", "memory", "cc"
#define TABULA_GEMV_ASM_NEXT "subs %[n], %[n], #1\n\tbne 1b\n\t"
#define TABULA_STR_(x) #x
#define TABULA_STR(x) TABULA_STR_(x)

/*
 * acc[o] = (bias ? bias[o] : 0) + sum_j x[j] w[o*len + j] over j < len, modulo 2^32, for o < n_out
 * (int32 accumulators, not requantized).  Output-channel blocking: full blocks of 4 channels run a
 * tight loop -- one x load, 4 weight loads, 4 VMLADAVA per 16 bytes (9 instructions + LE per 64
 * MACs) -- with the last 1..15 bytes through zeroing predicated loads (nothing read past either
 * array) and the weight pointers running on from block to block; a last block of 1..3 channels goes
 * through tabula_dot4_s8_mve.  Kept out of line on purpose: inlined into a kernel's pixel loops gcc 12
 * runs out of registers and spills accumulators and pointers inside the MAC loop.
 */
static __attribute__((noinline, unused)) void tabula_gemv_acc_s8_mve(const int8_t *x, const int8_t *w, int32_t len,
                                                                    int32_t n_out, const int32_t *bias, int32_t *acc)
{
    const int32_t nvec = len >> 4, rem = len & 15, full = n_out & ~3;
    int32_t o = 0;
    if (rem == 0 && nvec > 0 && full > 0) {
        /* The common case (len a multiple of 16) in hand-scheduled assembly: gcc 12 keeps the MAC loop
         * tight but spends ~40 instructions per block of 4 channels around it (spills).  Per block:
         * accumulators from the bias (or acc[] zeroed first), 3 row pointers, a low-overhead loop (DLS/LE)
         * of 1 x load + 4 weight loads + 4 VMLADAVA per 16 bytes, 2 STRD, x rewound, the weight
         * pointer runs on.  Same sums modulo 2^32 as the C below (and as the C twin of the assembly,
         * -DTABULA_NO_ASM=1). */
        int32_t nblk = full >> 2;
        int32_t *ap = acc;
        const int32_t *bp = bias; /* the accumulators start at the bias, read in the loop (0: acc zeroed) */
        if (!bias) {
            for (o = 0; o < full; o += 4) {
                vstrwq_s32(acc + o, vdupq_n_s32(0));
            }
            bp = acc;
        }
#if TABULA_USE_ASM
        {
        int32_t a0, a1, a2, a3;
        const int8_t *w1, *w2, *w3;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[a0], %[a1], [%[bp]], #8\n\t"
            "ldrd %[a2], %[a3], [%[bp]], #8\n\t"
            "add %[w1], %[w], %[len]\n\t"
            "add %[w2], %[w1], %[len]\n\t"
            "add %[w3], %[w2], %[len]\n\t"
            "lsr lr, %[len], #4\n\t"
            "dls lr, lr\n"
            "2:\n\t"
            "vldrb.u8 q0, [%[x]], #16\n\t"
            "vldrb.u8 q1, [%[w]], #16\n\t"
            "vmladava.s8 %[a0], q0, q1\n\t"
            "vldrb.u8 q2, [%[w1]], #16\n\t"
            "vmladava.s8 %[a1], q0, q2\n\t"
            "vldrb.u8 q3, [%[w2]], #16\n\t"
            "vmladava.s8 %[a2], q0, q3\n\t"
            "vldrb.u8 q1, [%[w3]], #16\n\t"
            "vmladava.s8 %[a3], q0, q1\n\t"
            "le lr, 2b\n\t"
            "strd %[a0], %[a1], [%[ap]], #8\n\t"
            "strd %[a2], %[a3], [%[ap]], #8\n\t"
            "sub %[x], %[x], %[len]\n\t"
            "mov %[w], %[w3]\n\t"
            TABULA_GEMV_ASM_NEXT
            : TABULA_GEMV_ASM_ACC4, [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3), [x] "+r"(x), [w] "+r"(w),
              [ap] "+r"(ap), [bp] "+r"(bp), [n] "+r"(nblk)
            : TABULA_GEMV_ASM_LEN);
        }
#else /* the C twin of the assembly: the same sums, block by block */
        for (; nblk > 0; --nblk, ap += 4, bp += 4, w += 4 * len) {
            int32_t a0 = bp[0], a1 = bp[1], a2 = bp[2], a3 = bp[3], j;
            for (j = 0; j < len; j += 16) {
                const int8x16_t xv = vldrbq_s8(x + j);
                a0 = vmladavaq_s8(a0, xv, vldrbq_s8(w + j));
                a1 = vmladavaq_s8(a1, xv, vldrbq_s8(w + len + j));
                a2 = vmladavaq_s8(a2, xv, vldrbq_s8(w + 2 * len + j));
                a3 = vmladavaq_s8(a3, xv, vldrbq_s8(w + 3 * len + j));
            }
            ap[0] = a0; ap[1] = a1; ap[2] = a2; ap[3] = a3;
        }
#endif
        o = full;
    }
    for (; o < full; o += 4) {
        const int8_t *w1 = w + len, *w2 = w1 + len, *w3 = w2 + len, *xp = x;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, k;
        if (bias) {
            a0 = bias[o]; a1 = bias[o + 1]; a2 = bias[o + 2]; a3 = bias[o + 3];
        }
        for (k = 0; k < nvec; ++k) {
            const int8x16_t xv = vldrbq_s8(xp);
            a0 = vmladavaq_s8(a0, xv, vldrbq_s8(w));
            a1 = vmladavaq_s8(a1, xv, vldrbq_s8(w1));
            a2 = vmladavaq_s8(a2, xv, vldrbq_s8(w2));
            a3 = vmladavaq_s8(a3, xv, vldrbq_s8(w3));
            xp += 16; w += 16; w1 += 16; w2 += 16; w3 += 16;
        }
        if (rem) {
            const mve_pred16_t p = vctp8q((uint32_t)rem);
            const int8x16_t xv = vldrbq_z_s8(xp, p);
            a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w, p));
            a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1, p));
            a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2, p));
            a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3, p));
        }
        acc[o] = a0; acc[o + 1] = a1; acc[o + 2] = a2; acc[o + 3] = a3;
        w = w3 + rem; /* the next block's first row */
    }
    if (o < n_out) {
        tabula_acc4_init(acc + o, bias, o, n_out - o);
        tabula_dot4_s8_mve(x, 0, len, w, len, n_out - o, acc + o);
    }
}

/* Output channels per tile of tabula_gemm_s8_mve's int32 scratch (256 bytes of stack). */
#define TABULA_GEMM_TILE 64

/*
 * Two input vectors at once (2-pixel blocking, conv2d/tabula_conv2d_s8_folded.c): acc[o] = bias[o] +
 * sum_j x0[j] w[o*len + j] and acc[TABULA_GEMM_TILE + o] the same over x1, modulo 2^32, for o < n_out <=
 * TABULA_GEMM_TILE, len a positive multiple of 16.  2 output channels x 2 inputs per pass: each weight vector is loaded once for both
 * inputs (2 x + 2 weight loads, 4 VMLADAVA per 16 bytes: 9 instructions + LE per 64 MACs against 10 for
 * tabula_gemv_acc_s8_mve), the accumulators start at the bias, and the per-call overhead is shared by
 * two pixels.  An odd last channel through tabula_dot4_s8_mve.  Hand-scheduled assembly (gcc 12 spills
 * the 4 accumulators and 6 pointers); the C twin below it (-DTABULA_NO_ASM=1) computes the same sums.
 */
static __attribute__((noinline, unused)) void tabula_gemv2_acc_s8_mve(const int8_t *x0, const int8_t *x1,
                                                                     const int8_t *w, int32_t len, int32_t n_out,
                                                                     const int32_t *bias, int32_t *acc)
{
    int32_t *acc1 = acc + TABULA_GEMM_TILE;
    int32_t npair = n_out >> 1, o = n_out & ~1;
    const int32_t *bp = bias;
    if (!bias) {
        memset(acc, 0, (size_t)n_out * sizeof(int32_t));
        bp = acc;
    }
    if (npair > 0) {
#if TABULA_USE_ASM
        int32_t a0, a1, a2, a3;
        const int8_t *w1;
        int32_t *ap = acc;
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[a0], %[a1], [%[bp]], #8\n\t"
            "mov %[a2], %[a0]\n\t"
            "mov %[a3], %[a1]\n\t"
            "add %[w1], %[w], %[len]\n\t"
            "lsr lr, %[len], #4\n\t"
            "dls lr, lr\n"
            "2:\n\t"
            "vldrb.u8 q0, [%[x0]], #16\n\t"
            "vldrb.u8 q2, [%[w]], #16\n\t"
            "vldrb.u8 q1, [%[x1]], #16\n\t"
            "vmladava.s8 %[a0], q0, q2\n\t"
            "vldrb.u8 q3, [%[w1]], #16\n\t"
            "vmladava.s8 %[a2], q1, q2\n\t"
            "vmladava.s8 %[a1], q0, q3\n\t"
            "vmladava.s8 %[a3], q1, q3\n\t"
            "le lr, 2b\n\t"
            "strd %[a2], %[a3], [%[ap], #4 * " TABULA_STR(TABULA_GEMM_TILE) "]\n\t"
            "strd %[a0], %[a1], [%[ap]], #8\n\t"
            "sub %[x0], %[x0], %[len]\n\t"
            "sub %[x1], %[x1], %[len]\n\t"
            "mov %[w], %[w1]\n\t"
            TABULA_GEMV_ASM_NEXT
            : TABULA_GEMV_ASM_ACC4, [w1] "=&r"(w1), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w), [ap] "+r"(ap),
              [bp] "+r"(bp), [n] "+r"(npair)
            : TABULA_GEMV_ASM_LEN);
#else /* the C twin of the assembly: the same sums, pair by pair */
        int32_t k;
        for (k = 0; k < npair; ++k, w += 2 * len) {
            int32_t a0 = bp[2 * k], a1 = bp[2 * k + 1], a2 = a0, a3 = a1, j;
            for (j = 0; j < len; j += 16) {
                const int8x16_t xv0 = vldrbq_s8(x0 + j), xv1 = vldrbq_s8(x1 + j);
                const int8x16_t wv0 = vldrbq_s8(w + j), wv1 = vldrbq_s8(w + len + j);
                a0 = vmladavaq_s8(a0, xv0, wv0);
                a2 = vmladavaq_s8(a2, xv1, wv0);
                a1 = vmladavaq_s8(a1, xv0, wv1);
                a3 = vmladavaq_s8(a3, xv1, wv1);
            }
            acc[2 * k] = a0; acc[2 * k + 1] = a1; acc1[2 * k] = a2; acc1[2 * k + 1] = a3;
        }
#endif
    }
    if (o < n_out) { /* the odd last channel (the assembly has moved bp on) */
        const int32_t b = bias ? bias[o] : 0;
        acc[o] = b;
        acc1[o] = b;
        tabula_dot4_s8_mve(x0, 0, len, w, len, 1, acc + o);
        tabula_dot4_s8_mve(x1, 0, len, w, len, 1, acc1 + o);
    }
}

/*
 * Requantize n int32 accumulators of output channels o0 .. o0+n-1 to int8 (out[0..n)) with the vector
 * epilogue (tabula_requant4_s8_mve's arithmetic; every shift >= 33): 4 channels per step, the {m, s}
 * pairs deinterleaved by one VLD2 (VLD20 + VLD21), a last 1..3 through the predicated gathers.
 */
static inline void tabula_requant_row_s8_mve(const int32_t *acc, int32_t n, const tabula_requant *rq, int32_t o0,
                                             int8_t *out)
{
    const int32_t zp = rq->output_zp;
    const int32x4_t lo = vdupq_n_s32(rq->out_min), hi = vdupq_n_s32(rq->out_max), c32 = vdupq_n_s32(32);
    int32_t o;
    for (o = 0; o + 4 <= n; o += 4) {
        const int32x4x2_t ms = vld2q_s32(tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * (o0 + o));
        int32x4_t v = vrshlq_s32(vmulhq_s32(vldrwq_s32(acc + o), ms.val[0]), vsubq_s32(c32, ms.val[1]));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), lo), hi);
        vstrbq_s32(out + o, v);
    }
    if (o < n) {
        tabula_requant4_s8_mve(vldrwq_z_s32(acc + o, vctp32q((uint32_t)(n - o))), rq, o0 + o, n - o, zp,
                               rq->out_min, rq->out_max, out + o);
    }
}

/*
 * GEMM over `rows` int8 input rows (x + r*len, len bytes each, e.g. the NHWC pixels of a 1x1 conv or
 * the batch of a FULLY_CONNECTED) against every output channel's weight row (w[o*len ..), out_c
 * rows): out[r*out_c + o] = bias[o] + sum_j x[r*len + j] w[o*len + j] modulo 2^32, as int32 or
 * requantized (rq; vec_rq: every shift >= 33, the vector epilogue, else tabula_store_acc32).
 * Per row and tile of up to TABULA_GEMM_TILE channels: tabula_gemv_acc_s8_mve into a stack scratch
 * (or straight into an int32 output), then tabula_requant_row_s8_mve over it.
 */
static inline void tabula_gemm_s8_mve(int32_t rows, const int8_t *x, int32_t len, const int8_t *w, int32_t out_c,
                                      const int32_t *bias, const tabula_requant *rq, int vec_rq, void *out)
{
    int32_t r, t, l, acc[TABULA_GEMM_TILE];
    for (r = 0; r < rows; ++r, x += len) {
        for (t = 0; t < out_c; t += TABULA_GEMM_TILE) {
            const int32_t nt = out_c - t < TABULA_GEMM_TILE ? out_c - t : TABULA_GEMM_TILE;
            const int32_t *bt = bias ? bias + t : 0;
            if (!rq) {
                tabula_gemv_acc_s8_mve(x, w + t * len, len, nt, bt, (int32_t *)out + r * out_c + t);
                continue;
            }
            tabula_gemv_acc_s8_mve(x, w + t * len, len, nt, bt, acc);
            if (vec_rq) {
                tabula_requant_row_s8_mve(acc, nt, rq, t, (int8_t *)out + r * out_c + t);
            } else {
                for (l = 0; l < nt; ++l) {
                    TABULA_STORE_ACC32(out, r * out_c + t + l, acc[l], rq, t + l, rq->output_zp, rq->out_min,
                                       rq->out_max, 0);
                }
            }
        }
    }
}

/* One input vector x[0..len) against every output channel: tabula_gemm_s8_mve of one row. */
static inline void tabula_gemv_s8_mve(const int8_t *x, int32_t len, const int8_t *w, int32_t out_c,
                                      const int32_t *bias, const tabula_requant *rq, int vec_rq, void *out)
{
    tabula_gemm_s8_mve(1, x, len, w, out_c, bias, rq, vec_rq, out);
}
#endif /* TABULA_HAVE_MVE */

#endif /* TABULA_GEMM_S8_MVE_H */
