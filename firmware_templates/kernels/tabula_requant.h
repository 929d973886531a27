/*
 * The requantization epilogue of the accumulator kernels, private to the kernel sources (static inline,
 * portable C99; the block is the public tabula_requant of tabula_types.h).  CONV2D, DEPTHWISE_CONV2D
 * and FULLY_CONNECTED check a block once per call (tabula_requant_ok), ask once whether every shift is
 * >= 33 (tabula_requant_shifts_ge33), and store each accumulator as it is or requantized
 * (TABULA_STORE_ACC32 / tabula_store_acc32, TABULA_STORE_ACC48 / tabula_store_acc48, both through
 * tabula_requantize32 / tabula_requantize48); the Helium vector twin is tabula_requant4_s8_mve
 * (tabula_mve.h).
 */
#ifndef TABULA_REQUANT_H
#define TABULA_REQUANT_H

#include "tabula_internal.h"

#if TABULA_HAVE_MVE
#include <arm_mve.h>
#endif

/*
 * The requantization epilogue of the accumulator kernels (CONV2D, DEPTHWISE_CONV2D, FULLY_CONNECTED;
 * the block is a tabula_requant, tabula_types.h).  tabula_requant_ok checks a block once per call:
 * output_zp in [zp_lo, zp_hi], lo <= out_min <= out_max <= hi, every multiplier of the out_c channels in
 * [0, m_end) and every shift in [2, 62].
 * The kernels then read output_zp, out_min, out_max into locals once (zp, lo, hi below: an int8 store
 * may alias the block, so read at every output they would be loaded again after each store) and the
 * channel's multiplier and shift per output.
 */
/* The words of a block (tabula_types.h: TABULA_REQUANT_HEAD fixed fields, then {multiplier, shift} per
 * channel) and channel o's multiplier and shift, read as words TABULA_REQUANT_HEAD + 2 o and + 1 of the
 * block.  (Read as channel[o].multiplier instead, gcc 12 allocates the kernels' registers differently
 * and their instruction counts move by up to 5 % either way; as words they compile as before the block
 * had a type.) */
static inline const int32_t *tabula_requant_words(const tabula_requant *rq)
{
    return (const int32_t *)(const void *)rq;
}

static inline int32_t tabula_requant_m(const tabula_requant *rq, int32_t o)
{
    return tabula_requant_words(rq)[TABULA_REQUANT_HEAD + 2 * o];
}

static inline int32_t tabula_requant_s(const tabula_requant *rq, int32_t o)
{
    return tabula_requant_words(rq)[TABULA_REQUANT_HEAD + 1 + 2 * o];
}

static inline int tabula_requant_ok(const tabula_requant *rq, int32_t out_c, int32_t zp_lo, int32_t zp_hi, int64_t lo,
                                    int64_t hi, int64_t m_end)
{
    int32_t o;
    if (rq->output_zp < zp_lo || rq->output_zp > zp_hi || rq->out_min < lo || rq->out_max > hi
        || rq->out_min > rq->out_max) {
        return 0;
    }
    o = 0;
#if TABULA_HAVE_MVE
    { /* 4 channels per VLD2 (the {m, s} pairs deinterleaved): the unsigned maxima of m and of s - 2 (m < 0
       * and s < 2 wrap above every bound); the last 1..3 channels below */
        uint32x4_t mx = vdupq_n_u32(0u), sx = vdupq_n_u32(0u);
        for (; o + 4 <= out_c; o += 4) {
            const uint32x4x2_t ms = vld2q_u32((const uint32_t *)tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * o);
            mx = vmaxq_u32(mx, ms.val[0]);
            sx = vmaxq_u32(sx, vsubq_n_u32(ms.val[1], 2u));
        }
        if (vmaxvq_u32(0u, mx) >= (uint32_t)m_end || vmaxvq_u32(0u, sx) > 60u) {
            return 0;
        }
    }
#endif
    for (; o < out_c; ++o) {
        const int32_t m = tabula_requant_m(rq, o), s = tabula_requant_s(rq, o);
        if (m < 0 || (int64_t)m >= m_end || s < 2 || s > 62) {
            return 0;
        }
    }
    return 1;
}

/* A kernel's requant argument refused for an output of type T: a block (NULL: the accumulators are
 * written) that fails tabula_requant_ok for T -- int8_t (an int32 accumulator through apply_scale_32:
 * multipliers below 2^31) or int16_t (an int48 accumulator through apply_scale_16: below 2^15), the zero
 * point and the clamp bounds within T's (TABULA_ZP_MIN, TABULA_MIN of tabula_internal.h). */
#define TABULA_REQUANT_INVALID(rq, out_c, T) TABULA_REQUANT_INVALID_X(rq, out_c, T, sizeof(T) != 1u)

/* The same for a cross-dtype epilogue (a precision boundary of scheme=mixed: int48 -> int8, int32 ->
 * int16): the zero point and the clamp bounds within the output type T, the multipliers below the
 * accumulator's limit -- acc48 1: int48 through apply_scale_16 (< 2^15); 0: int32 through apply_scale_32
 * (< 2^31). */
#define TABULA_REQUANT_INVALID_X(rq, out_c, T, acc48)                                                     \
    ((rq) && !tabula_requant_ok((rq), (out_c), TABULA_ZP_MIN(T), TABULA_ZP_MAX(T), TABULA_MIN(T),         \
                                TABULA_MAX(T), (acc48) ? INT64_C(1) << 15 : INT64_C(1) << 31))

/* zp, lo, hi = the block's output_zp, out_min, out_max when there is one (the kernels' locals, read once
 * per call; left as they are without a block). */
#define TABULA_REQUANT_READ(rq, zp, lo, hi)                                                               \
    if (rq) {                                                                                             \
        zp = (rq)->output_zp; lo = (rq)->out_min; hi = (rq)->out_max;                                     \
    }

/* 1 when every shift of the out_c channels is >= 33 (the usual case; the kernels ask once per call):
 * then tabula_requantize32 needs its 32-bit branch only, and the Helium vector epilogue is exact.  On
 * Helium cores a branch-free minimum, elsewhere an early exit: each as its paths had it before this
 * was one function, so that they compile to the instructions they had. */
static inline int32_t tabula_requant_shifts_ge33(const tabula_requant *rq, int32_t out_c)
{
    int32_t o;
#if TABULA_HAVE_MVE
    int32_t s = 62;
    int32x4_t sv = vdupq_n_s32(62);
    for (o = 0; o + 4 <= out_c; o += 4) { /* 4 shifts per VLD2, the last 1..3 below */
        sv = vminq_s32(sv, vld2q_s32(tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * o).val[1]);
    }
    s = vminvq_s32(s, sv);
    for (; o < out_c; ++o) {
        s = tabula_requant_s(rq, o) < s ? tabula_requant_s(rq, o) : s;
    }
    return s >= 33;
#else
    for (o = 0; o < out_c; ++o) {
        if (tabula_requant_s(rq, o) < 33) {
            return 0;
        }
    }
    return 1;
#endif
}

/* The requantization of an int32 accumulator: apply_scale_32(acc, m, s) + zp clamped to [lo, hi]
 * (|acc * m| < 2^62: no overflow).  For s >= 33 (the usual requantizing shift; not even tested when the
 * caller knows every shift of the block is: ge33) in 32-bit operations: with p = acc * m,
 *     floor((p + 2^(s-1)) / 2^s) == (floor(p / 2^(s-1)) + 1) >> 1,  floor(p / 2^(s-1)) == hi32(p) >> (s - 33)
 * (|hi32(p)| < 2^30, so nothing overflows); otherwise in 64 bits as tabula_apply_scale_32.  The Helium
 * paths' vector twin: tabula_requant4_s8_mve. */
static inline int32_t tabula_requantize32(int32_t acc, int32_t m, int32_t s, int32_t zp, int32_t lo, int32_t hi,
                                          int32_t ge33)
{
    int32_t v;
    if (ge33 || s >= 33) {
        const int32_t t = tabula_asr32((int32_t)tabula_asr64((int64_t)acc * m, 32), s - 33);
        v = tabula_asr32(t + 1, 1) + zp;
    } else {
        const int64_t w = tabula_asr64((int64_t)acc * m + ((int64_t)1 << (s - 1)), s) + zp;
        v = w < lo ? lo : (w > hi ? hi : (int32_t)w);
    }
    return v < lo ? lo : (v > hi ? hi : v);
}

/* The requantization of an int48 accumulator (held in int64_t): apply_scale_16(acc, m, s) + zp clamped
 * to [lo, hi] (m < 2^15: exact for every int48 acc; taken modulo 2^64, never undefined, for one outside
 * the IR contract). */
static inline int32_t tabula_requantize48(int64_t acc, int32_t m, int32_t s, int32_t zp, int32_t lo, int32_t hi)
{
    const uint64_t x = (uint64_t)acc * (uint64_t)(uint32_t)m + (UINT64_C(1) << (s - 1));
    const int64_t v = tabula_asr64(tabula_u64_to_s64(x), s) + zp;
    return v < lo ? lo : (v > hi ? hi : (int32_t)v);
}

/*
 * The one store of an int32 accumulator kernel: accumulator acc of output channel o at output element
 * `at`, requantized to int8 by rq's channel o (zp, lo, hi: its output_zp, out_min, out_max read once;
 * ge33: every shift is >= 33, the 32-bit arithmetic without a test) or, rq == NULL, the accumulator
 * itself (int32); zp, lo and hi are evaluated only when rq != NULL.  Two spellings of the same lines:
 * the macro where a kernel had them in line, tabula_store_acc32 (ge33 0) where it called a function.
 * gcc 12 compiles a call and the lines in place differently, and optimizes a function body for both
 * values of a flag before it is inlined; so each kernel keeps the instructions it had (as one function
 * everywhere, instruction counts moved by up to 2 %, either way).
 */
#define TABULA_STORE_ACC32(output, at, acc, rq, o, zp, lo, hi, ge33)                                          \
    do {                                                                                                  \
        if (rq) {                                                                                         \
            if (ge33) {                                                                                   \
                ((int8_t *)(output))[at] = (int8_t)tabula_requantize32(                                  \
                    (acc), tabula_requant_m((rq), (o)), tabula_requant_s((rq), (o)), (zp), (lo), (hi), 1); \
            } else {                                                                                      \
                ((int8_t *)(output))[at] = (int8_t)tabula_requantize32(                                  \
                    (acc), tabula_requant_m((rq), (o)), tabula_requant_s((rq), (o)), (zp), (lo), (hi), 0); \
            }                                                                                             \
        } else {                                                                                          \
            ((int32_t *)(output))[at] = (acc);                                                            \
        }                                                                                                 \
    } while (0)

/* The one store of an int48 accumulator kernel: requantized to int16 (tabula_requantize48) or, rq ==
 * NULL, the accumulator itself (int64_t); the two spellings as TABULA_STORE_ACC32's. */
#define TABULA_STORE_ACC48(output, at, acc, rq, o, zp, lo, hi)                                                \
    do {                                                                                                  \
        if (rq) {                                                                                         \
            ((int16_t *)(output))[at] = (int16_t)tabula_requantize48(                                    \
                (acc), tabula_requant_m((rq), (o)), tabula_requant_s((rq), (o)), (zp), (lo), (hi));       \
        } else {                                                                                          \
            ((int64_t *)(output))[at] = (acc);                                                            \
        }                                                                                                 \
    } while (0)

/* The stores of a cross-dtype epilogue (a precision boundary; the kernel requires a block, rq != NULL):
 * an int32 accumulator through tabula_requantize32 (ge33 as TABULA_STORE_ACC32's), or an int48 one
 * through tabula_requantize48, written as an element of type T (int8_t, int16_t) -- the output type's
 * range is the block's [out_min, out_max], checked once per call by TABULA_REQUANT_INVALID_X. */
#define TABULA_STORE_REQ32(output, at, acc, rq, o, zp, lo, hi, ge33, T)                                       \
    do {                                                                                                  \
        if (ge33) {                                                                                       \
            ((T *)(output))[at] = (T)tabula_requantize32(                                                 \
                (acc), tabula_requant_m((rq), (o)), tabula_requant_s((rq), (o)), (zp), (lo), (hi), 1);    \
        } else {                                                                                          \
            ((T *)(output))[at] = (T)tabula_requantize32(                                                 \
                (acc), tabula_requant_m((rq), (o)), tabula_requant_s((rq), (o)), (zp), (lo), (hi), 0);    \
        }                                                                                                 \
    } while (0)

#define TABULA_STORE_REQ48(output, at, acc, rq, o, zp, lo, hi, T)                                             \
    do {                                                                                                  \
        ((T *)(output))[at] = (T)tabula_requantize48(                                                     \
            (acc), tabula_requant_m((rq), (o)), tabula_requant_s((rq), (o)), (zp), (lo), (hi));           \
    } while (0)

static inline void tabula_store_acc32(void *output, int32_t at, int32_t acc, const tabula_requant *rq, int32_t o,
                                      int32_t zp, int32_t lo, int32_t hi)
{
    TABULA_STORE_ACC32(output, at, acc, rq, o, zp, lo, hi, 0);
}

static inline void tabula_store_acc48(void *output, int32_t at, int64_t acc, const tabula_requant *rq, int32_t o,
                                      int32_t zp, int32_t lo, int32_t hi)
{
    TABULA_STORE_ACC48(output, at, acc, rq, o, zp, lo, hi);
}

#endif /* TABULA_REQUANT_H */
