/*
 * Helium (MVE, Cortex-M55) helpers shared by the accumulator kernels: the dot products, the vector
 * requantization epilogue, blocks of 4 output channels and byte copies.  Private to the kernel sources
 * (static inline); compiled only where tabula_internal.h sets TABULA_HAVE_MVE (MVE, not
 * TABULA_PORTABLE_ONLY).  The GEMM / GEMV of CONV2D and FULLY_CONNECTED is
 * fully_connected/tabula_gemm_s8_mve.h.  Every sum wraps modulo 2^32 (2^64) like the portable paths.
 */
#ifndef TABULA_MVE_H
#define TABULA_MVE_H

#include <string.h>

#include "tabula_requant.h"

#if TABULA_HAVE_MVE
#include <arm_mve.h>

/* sum_j x[j] * w[j] (returned) and sum_j w[j] (*wsum) over len int8 pairs, 16 lanes per
 * predicated VMLADAVA / VADDVA; both wrap modulo 2^32 like the scalar paths' uint32 sums. */
static inline int32_t tabula_dot_s8_mve(const int8_t *x, const int8_t *w, int32_t len, int32_t *wsum)
{
    int32_t dot = 0, ws = 0, j;
    for (j = 0; j < len; j += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)(len - j));
        const int8x16_t xv = vldrbq_z_s8(x + j, p);
        const int8x16_t wv = vldrbq_z_s8(w + j, p);
        dot = vmladavaq_p_s8(dot, xv, wv, p);
        ws = vaddvaq_p_s8(ws, wv, p);
    }
    *wsum = ws;
    return dot;
}

/* sum_j x[j] * w[j] over len (int16, int8) pairs, 8 lanes per predicated VMLALDAVA (the int8 weights
 * are sign-extended to int16 by VLDRB.S16); the 64-bit accumulator wraps modulo 2^64 like the
 * scalar paths' uint64 sums. */
static inline int64_t tabula_dot_s16_s8_mve(const int16_t *x, const int8_t *w, int32_t len)
{
    int64_t dot = 0;
    int32_t j;
    for (j = 0; j < len; j += 8) {
        const mve_pred16_t p = vctp16q((uint32_t)(len - j));
        const int16x8_t xv = vldrhq_z_s16(x + j, p);
        const int16x8_t wv = vldrbq_z_s16(w + j, p);
        dot = vmlaldavaq_p_s16(dot, xv, wv, p);
    }
    return dot;
}

/*
 * Two int16 x int8 dot products over one input row: *a0 += sum_j x[j] w0[j], *a1 += sum_j x[j] w1[j]
 * over j < len (len >= 1), 64-bit accumulators modulo 2^64 like the scalar paths' uint64 sums (int16
 * CONV2D / FULLY_CONNECTED, a16w8).  Each input vector (8 int16) is loaded once for both rows, the int8
 * weights sign-extended to int16 by VLDRB.S16, one VMLALDAVA per row: 3 loads + 2 MACs per 16 MACs.
 * Assembly: a tail-predicated low-overhead loop (DLSTP.16 / LETP: the last 1..7 lanes predicated by the
 * loop, nothing read past any row; VMLALDAVA's RdaLo / RdaHi in an even / odd register); the C twin below it (-DTABULA_NO_ASM=1) sums the same products.
 */
static inline void tabula_dot2_s16_s8_mve(const int16_t *x, const int8_t *w0, const int8_t *w1, int32_t len,
                                          int64_t *a0, int64_t *a1)
{
#if TABULA_USE_ASM
    /* RdaLo / RdaHi pinned to r0 / r1 and r2 / r3 (gcc 12 has no odd-register constraint) */
    register uint32_t l0 __asm__("r0") = (uint32_t)(uint64_t)*a0;
    register uint32_t h0 __asm__("r1") = (uint32_t)((uint64_t)*a0 >> 32);
    register uint32_t l1 __asm__("r2") = (uint32_t)(uint64_t)*a1;
    register uint32_t h1 __asm__("r3") = (uint32_t)((uint64_t)*a1 >> 32);
    __asm__ volatile("dlstp.16 lr, %[len]\n"
                     "1:\n\t"
                     "vldrh.s16 q0, [%[x]], #16\n\t"
                     "vldrb.s16 q1, [%[w0]], #8\n\t"
                     "vmlaldava.s16 %[l0], %[h0], q0, q1\n\t"
                     "vldrb.s16 q2, [%[w1]], #8\n\t"
                     "vmlaldava.s16 %[l1], %[h1], q0, q2\n\t"
                     "letp lr, 1b\n"
                     : [l0] "+r"(l0), [h0] "+r"(h0), [l1] "+r"(l1), [h1] "+r"(h1), [x] "+r"(x), [w0] "+r"(w0),
                       [w1] "+r"(w1)
                     : [len] "r"(len)
                     : "lr", "q0", "q1", "q2", "memory");
    *a0 = tabula_u64_to_s64(((uint64_t)h0 << 32) | l0);
    *a1 = tabula_u64_to_s64(((uint64_t)h1 << 32) | l1);
#else
    int64_t s0 = *a0, s1 = *a1;
    int32_t j;
    for (j = 0; j < len; j += 8) {
        const mve_pred16_t p = vctp16q((uint32_t)(len - j));
        const int16x8_t xv = vldrhq_z_s16(x + j, p);
        s0 = vmlaldavaq_p_s16(s0, xv, vldrbq_z_s16(w0 + j, p), p);
        s1 = vmlaldavaq_p_s16(s1, xv, vldrbq_z_s16(w1 + j, p), p);
    }
    *a0 = s0;
    *a1 = s1;
#endif
}

/* 1 when every shift of the out_c channels of an int16-output block is in [17, 46]: the range where
 * tabula_requant4_s16_mve is exact (real a16w8 layers: their 15-bit multipliers put s near 15 +
 * log2(1 / scale)). */
static inline int tabula_requant_s16_vec_ok(const tabula_requant *rq, int32_t out_c)
{
    int32_t o;
    for (o = 0; o < out_c; ++o) {
        const int32_t s = tabula_requant_s(rq, o);
        if (s < 17 || s > 46) {
            return 0;
        }
    }
    return 1;
}

/*
 * Vectorized apply_scale_16 of 4 accumulators that fit int32 (the caller knows: acc is the exact int48
 * value) of output channels o .. o+3 to int16: lane l becomes clamp(apply_scale_16(acc[l], m, s) + zp,
 * lo, hi), bit-exact with tabula_requantize48 for every shift s in [17, 46] (tabula_requant_s16_vec_ok).
 * Proof: m < 2^15, so m' = m 2^16 < 2^31 is a valid VMULH operand and p' = acc m' (|p'| < 2^62) is
 * p = acc m times 2^16; t = VMULH(acc, m') = floor(p' / 2^32); VRSHL(t, 16 - s) is the rounding right
 * shift by n = s - 16 in [1, 30]: floor((floor(p' / 2^32) + 2^(n-1)) / 2^n) = floor((p' + 2^(s+15)) /
 * 2^(s+16)) = floor((p + 2^(s-1)) / 2^s), TOSA's apply_scale_16 (|t| < 2^30: + zp cannot overflow), then
 * the clamp in 32-bit lanes and VSTRH.32 of the first `count` (1..4) lanes.
 */
/* The body of tabula_requant4_s16_mve and of its int8-storing twin tabula_requant4_s16_s8_mve (a
 * precision boundary: int48 accumulators to an int8 tensor, lo and hi within int8, so the low byte of the
 * clamped lane is its value): one text, the store (VSTRH.32 / VSTRB.32) a parameter. */
#define TABULA_REQUANT4_S16_FN(NAME, OUT_T, STORE, STORE_P)                                                \
    static inline void NAME(int32x4_t acc, const tabula_requant *rq, int32_t o, int32_t count, int32_t zp,  \
                            int32_t lo, int32_t hi, OUT_T *out)                                            \
    {                                                                                                      \
        const uint32x4_t pairs = vidupq_n_u32(0u, 2); /* 0, 2, 4, 6: word offsets of the {m, s} pairs */  \
        const int32_t *requant = tabula_requant_words(rq);                                                 \
        int32x4_t m, s, v;                                                                                 \
        mve_pred16_t p = 0;                                                                                \
        if (count == 4) {                                                                                  \
            m = vldrwq_gather_shifted_offset_s32(requant + TABULA_REQUANT_HEAD + 2 * o, pairs);            \
            s = vldrwq_gather_shifted_offset_s32(requant + (TABULA_REQUANT_HEAD + 1) + 2 * o, pairs);      \
        } else {                                                                                           \
            p = vctp32q((uint32_t)count);                                                                  \
            m = vldrwq_gather_shifted_offset_z_s32(requant + TABULA_REQUANT_HEAD + 2 * o, pairs, p);       \
            s = vldrwq_gather_shifted_offset_z_s32(requant + (TABULA_REQUANT_HEAD + 1) + 2 * o, pairs, p); \
        }                                                                                                  \
        v = vrshlq_s32(vmulhq_s32(acc, vshlq_n_s32(m, 16)), vsubq_s32(vdupq_n_s32(16), s));                \
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), vdupq_n_s32(lo)), vdupq_n_s32(hi));                    \
        if (count == 4) {                                                                                  \
            STORE(out, v);                                                                                 \
        } else {                                                                                           \
            STORE_P(out, v, p);                                                                            \
        }                                                                                                  \
    }

TABULA_REQUANT4_S16_FN(tabula_requant4_s16_mve, int16_t, vstrhq_s32, vstrhq_p_s32)
TABULA_REQUANT4_S16_FN(tabula_requant4_s16_s8_mve, int8_t, vstrbq_s32, vstrbq_p_s32)

/*
 * Write n (1..) int48 accumulators acc[0..n) (int64_t) of output channels o.. to out: int64 (rq ==
 * NULL), else requantized to int16 -- per 4 channels, when vec (every shift in [17, 46]) and all 4 fit
 * int32 (their high words the sign of their low words: VLD2 splits them), by tabula_requant4_s16_mve,
 * otherwise by tabula_requantize48 per channel; the same bits either way.
 */
static inline void tabula_store_row48_mve(const int64_t *acc, int32_t o, int32_t n, const tabula_requant *rq, int vec,
                                          int32_t zp, int32_t lo, int32_t hi, void *out)
{
    int32_t i = 0, l;
    if (!rq) {
        memcpy((int64_t *)out + o, acc, (size_t)n * sizeof(int64_t));
        return;
    }
    for (; vec && i < n; i += 4) {
        const int32_t cnt = n - i < 4 ? n - i : 4;
        const int32x4x2_t lh = vld2q_s32((const int32_t *)(const void *)(acc + i)); /* low, high words */
        const mve_pred16_t fit = vcmpeqq_s32(lh.val[1], vshrq_n_s32(lh.val[0], 31));
        if ((fit & (uint32_t)vctp32q((uint32_t)cnt)) == (uint32_t)vctp32q((uint32_t)cnt)) {
            tabula_requant4_s16_mve(lh.val[0], rq, o + i, cnt, zp, lo, hi, (int16_t *)out + o + i);
        } else {
            for (l = 0; l < cnt; ++l) {
                TABULA_STORE_ACC48(out, o + i + l, acc[i + l], rq, o + i + l, zp, lo, hi);
            }
        }
    }
    for (; i < n; ++i) {
        TABULA_STORE_ACC48(out, o + i, acc[i], rq, o + i, zp, lo, hi);
    }
}

/* Output channels per tile of tabula_gemv_s16_mve's int64 scratch (512 bytes of stack). */
#define TABULA_GEMV16_TILE 64

/*
 * One int16 row x (len values) against out_c int8 weight rows (w, row o at w + o len): output o =
 * (bias ? bias[o] : 0) + sum_j x[j] w[o len + j] modulo 2^64, written by tabula_store_row48_mve (int64,
 * or requantized to int16; vec: every shift in [17, 46]) at out's channels 0..out_c.  Per tile of
 * TABULA_GEMV16_TILE channels, 2 rows per tabula_dot2_s16_s8_mve (an odd last row paired with itself,
 * its second sum ignored).  Out of line: inlined into the pixel loops gcc 12 would spill around the
 * assembly loop.
 */
static __attribute__((noinline, unused)) void tabula_gemv_s16_mve(const int16_t *x, int32_t len, const int8_t *w,
                                                                 int32_t out_c, const int64_t *bias,
                                                                 const tabula_requant *rq, int vec, void *out)
{
    int64_t acc[TABULA_GEMV16_TILE + 1]; /* + 1: an odd last row's ignored second sum */
    const int32_t zp = rq ? rq->output_zp : 0, lo = rq ? rq->out_min : 0, hi = rq ? rq->out_max : 0;
    int32_t t, o;
    for (t = 0; t < out_c; t += TABULA_GEMV16_TILE) {
        const int32_t nt = out_c - t < TABULA_GEMV16_TILE ? out_c - t : TABULA_GEMV16_TILE;
        for (o = 0; o < nt; o += 2) {
            const int8_t *w0 = w + (t + o) * len, *w1 = o + 1 < nt ? w0 + len : w0;
            int64_t a0 = bias ? bias[t + o] : 0, a1 = (bias && o + 1 < nt) ? bias[t + o + 1] : 0;
            tabula_dot2_s16_s8_mve(x, w0, w1, len, &a0, &a1);
            acc[o] = a0;
            acc[o + 1] = a1;
        }
        tabula_store_row48_mve(acc, t, nt, rq, vec, zp, lo, hi, out);
    }
}

/*
 * Vectorized requantization of 4 int32 accumulators (lanes) of output channels o .. o+3: lane l
 * becomes clamp(apply_scale_32(acc[l], m, s) + zp, lo, hi) with m, s = channel o + l's scale and zp, lo,
 * hi = its output_zp, out_min, out_max, bit-exact with tabula_requantize32 for every shift s >= 33
 * (callers ask once per call, tabula_requant_shifts_ge33, and use tabula_store_acc32
 * otherwise: s == 32 would need VRMULH, (p + 2^31) >> 32, and a per-lane select, six more
 * instructions per block for a shift real layers do not have).  Proof, with p = acc * m (|p| < 2^62)
 * and floor((floor(y) + k) / d) == floor((y + k) / d) for integers k, d > 0:
 * t = VMULH(acc, m) = floor(p / 2^32) (|t| < 2^30); VRSHL(t, 32 - s) is the rounding right shift by
 * n = s - 32 in [1, 30], floor((t + 2^(n-1)) / 2^n) = floor((floor(p / 2^32) + 2^(s-33)) / 2^(s-32))
 * = floor((p + 2^(s-1)) / 2^s): TOSA's single rounding (half toward +infinity) exactly.
 * Then + zp (|v| < 2^30: no overflow), VMAX / VMIN to [lo, hi] (zp, lo, hi passed as values: a byte
 * store cannot force them to be reloaded), and VSTRB.32 writes the low byte of the first `count`
 * lanes (1..4; the others are not loaded either: predicated gathers).
 */
/* The body of tabula_requant4_s8_mve and of its int16-storing twin tabula_requant4_s8_s16_mve (a precision
 * boundary: int32 accumulators to an int16 tensor, lo and hi within int16; |v| < 2^30 before the clamp
 * as above): one text, the store (VSTRB.32 / VSTRH.32) a parameter. */
#define TABULA_REQUANT4_S8_FN(NAME, OUT_T, STORE, STORE_P)                                                 \
    static inline void NAME(int32x4_t acc, const tabula_requant *rq, int32_t o, int32_t count, int32_t zp,  \
                            int32_t lo, int32_t hi, OUT_T *out)                                            \
    {                                                                                                      \
        const uint32x4_t pairs = vidupq_n_u32(0u, 2); /* 0, 2, 4, 6: word offsets of the {m, s} pairs */  \
        const int32_t *requant = tabula_requant_words(rq);                                                 \
        int32x4_t m, s, v;                                                                                 \
        mve_pred16_t p = 0;                                                                                \
        if (count == 4) { /* (gcc 12 ICEs on a predicate that folds to a constant: no vctp32q(4)) */       \
            m = vldrwq_gather_shifted_offset_s32(requant + TABULA_REQUANT_HEAD + 2 * o, pairs);            \
            s = vldrwq_gather_shifted_offset_s32(requant + (TABULA_REQUANT_HEAD + 1) + 2 * o, pairs);      \
        } else {                                                                                           \
            p = vctp32q((uint32_t)count);                                                                  \
            m = vldrwq_gather_shifted_offset_z_s32(requant + TABULA_REQUANT_HEAD + 2 * o, pairs, p);       \
            s = vldrwq_gather_shifted_offset_z_s32(requant + (TABULA_REQUANT_HEAD + 1) + 2 * o, pairs, p); \
        }                                                                                                  \
        v = vrshlq_s32(vmulhq_s32(acc, m), vsubq_s32(vdupq_n_s32(32), s));                                 \
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), vdupq_n_s32(lo)), vdupq_n_s32(hi));                    \
        if (count == 4) {                                                                                  \
            STORE(out, v);                                                                                 \
        } else {                                                                                           \
            STORE_P(out, v, p);                                                                            \
        }                                                                                                  \
    }

TABULA_REQUANT4_S8_FN(tabula_requant4_s8_mve, int8_t, vstrbq_s32, vstrbq_p_s32)
TABULA_REQUANT4_S8_FN(tabula_requant4_s8_s16_mve, int16_t, vstrhq_s32, vstrhq_p_s32)

/*
 * Requantize 8 channels whose int32 accumulators are in the even (e: channels 0, 2, 4, 6) and odd (o: 1,
 * 3, 5, 7) lanes, with per-lane multipliers m[0..8) and VRSHL shifts sh[0..8) = 32 - s in the same order
 * (e's lanes first), to one int16x8 in channel order: v = VRSHL(VMULH(acc, m), 32 - s) per lane as
 * tabula_requant4_s8_mve (bit-exact with tabula_requantize32 for s >= 33, |v| < 2^30), VQMOVNB / VQMOVNT
 * narrow e / o with saturation into the even / odd int16 lanes (channel order), + zp (VQADD) and the
 * clamp to [lo, hi]: saturating at +-2^15 first changes nothing, as zp, lo and hi are int8.  The caller
 * stores the low bytes (VSTRB.16).
 */
static inline int16x8_t tabula_requant8_eo_s8_mve(int32x4_t e, int32x4_t o, const int32_t *m, const int32_t *sh,
                                                  int32_t zp, int16x8_t lo, int16x8_t hi)
{
    const int32x4_t ve = vrshlq_s32(vmulhq_s32(e, vldrwq_s32(m)), vldrwq_s32(sh));
    const int32x4_t vo = vrshlq_s32(vmulhq_s32(o, vldrwq_s32(m + 4)), vldrwq_s32(sh + 4));
    const int16x8_t h = vqmovntq_s32(vqmovnbq_s32(vuninitializedq_s16(), ve), vo);
    return vminq_s16(vmaxq_s16(vqaddq_n_s16(h, (int16_t)zp), lo), hi);
}

/*
 * Output-channel blocking: acc[l] += sum_j x[j] w[l*wstride + j] over j < n for the nch (1..4) rows
 * at w, modulo 2^32 (VMLADAVA wraps like the scalar paths' uint32 sums).  Each 16-byte input vector
 * is loaded once for the 4 rows (4 accumulators, 4 VMLADAVA: 5 loads + 4 MACs instructions per 64
 * MACs); the last 1..15 bytes with zeroing predicated loads (nothing read past either array).  A
 * block of 1..3 rows aliases the missing rows to the last real one (their sums are computed and
 * ignored).  x == NULL: every x[j] is pad (a padded tap of a folded-bias conv).
 */
static inline void tabula_dot4_s8_mve(const int8_t *x, int32_t pad, int32_t n, const int8_t *w, int32_t wstride,
                                      int32_t nch, int32_t *acc)
{
    const int8_t *w0 = w;
    const int8_t *w1 = nch > 1 ? w0 + wstride : w0;
    const int8_t *w2 = nch > 2 ? w1 + wstride : w1;
    const int8_t *w3 = nch > 3 ? w2 + wstride : w2;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], j = 0;
    if (x) {
        for (; j + 16 <= n; j += 16) {
            const int8x16_t xv = vldrbq_s8(x + j);
            a0 = vmladavaq_s8(a0, xv, vldrbq_s8(w0 + j));
            a1 = vmladavaq_s8(a1, xv, vldrbq_s8(w1 + j));
            a2 = vmladavaq_s8(a2, xv, vldrbq_s8(w2 + j));
            a3 = vmladavaq_s8(a3, xv, vldrbq_s8(w3 + j));
        }
    }
    for (; j < n; j += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)(n - j));
        const int8x16_t xv = x ? vldrbq_z_s8(x + j, p) : vdupq_m_n_s8(vdupq_n_s8(0), (int8_t)pad, p);
        a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0 + j, p));
        a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1 + j, p));
        a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2 + j, p));
        a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3 + j, p));
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}

/* Start a block of nch (1..4) accumulators of channels o.. at the bias (0 without one). */
static inline void tabula_acc4_init(int32_t *acc, const int32_t *bias, int32_t o, int32_t nch)
{
    int32_t l;
    for (l = 0; l < 4; ++l) {
        acc[l] = (bias && l < nch) ? bias[o + l] : 0;
    }
}

/* Write a block of nch accumulators of channels o..: int32 (rq == NULL) or requantized to int8, by the
 * vector epilogue when vec_rq (every shift >= 33), else by tabula_store_acc32. */
static inline void tabula_acc4_store_s8(const int32_t *acc, int32_t o, int32_t nch, const tabula_requant *rq,
                                        int vec_rq, void *out)
{
    int32_t l;
    if (rq && vec_rq) {
        int32x4_t v = vdupq_n_s32(acc[0]);
        v = vsetq_lane_s32(acc[1], v, 1);
        v = vsetq_lane_s32(acc[2], v, 2);
        v = vsetq_lane_s32(acc[3], v, 3);
        tabula_requant4_s8_mve(v, rq, o, nch, rq->output_zp, rq->out_min, rq->out_max, (int8_t *)out + o);
        return;
    }
    for (l = 0; l < nch; ++l) {
        TABULA_STORE_ACC32(out, o + l, acc[l], rq, o + l, rq->output_zp, rq->out_min, rq->out_max, 0);
    }
}

/* dst[0..n) = src[0..n) (16 bytes per predicated VLDRB / VSTRB).  Assembly: a tail-predicated loop
 * (WLSTP / LETP: 3 instructions per 16 bytes, the last 1..15 predicated by the loop itself; gcc 12 spends
 * 11 building each predicate); the C twin below it (-DTABULA_NO_ASM=1) copies the same bytes. */
static inline void tabula_copy_s8_mve(int8_t *dst, const int8_t *src, int32_t n)
{
#if TABULA_USE_ASM
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vldrb.8 q0, [%[s]], #16\n\t"
                     "vstrb.8 q0, [%[d]], #16\n\t"
                     "letp lr, 1b\n"
                     "2:"
                     : [s] "+r"(src), [d] "+r"(dst)
                     : [n] "r"(n)
                     : "lr", "q0", "memory");
#else
    int32_t j;
    for (j = 0; j < n; j += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)(n - j));
        vstrbq_p_s8(dst + j, vldrbq_z_s8(src + j, p), p);
    }
#endif
}

/* dst[0..n) = value (the same tail-predicated loop as tabula_copy_s8_mve, C twin below it). */
static inline void tabula_fill_s8_mve(int8_t *dst, int32_t value, int32_t n)
{
    const int8x16_t v = vdupq_n_s8((int8_t)value);
#if TABULA_USE_ASM
    __asm__ volatile("wlstp.8 lr, %[n], 2f\n"
                     "1:\n\t"
                     "vstrb.8 %q[v], [%[d]], #16\n\t"
                     "letp lr, 1b\n"
                     "2:"
                     : [d] "+r"(dst)
                     : [n] "r"(n), [v] "w"(v)
                     : "lr", "memory");
#else
    int32_t j;
    for (j = 0; j < n; j += 16) {
        vstrbq_p_s8(dst + j, v, vctp8q((uint32_t)(n - j)));
    }
#endif
}
#endif /* TABULA_HAVE_MVE */

#endif /* TABULA_MVE_H */
