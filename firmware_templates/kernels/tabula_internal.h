/*
 * Private helpers shared by the kernel sources (static inline; not part of the public contract in
 * tabula_kernels.h, which python/tabula/kernels.py generates from manifest.toml).  Everything here is
 * portable C99 with no undefined or implementation-defined behaviour: signed results are rebuilt
 * from unsigned (modulo) arithmetic, and right shifts of negative numbers are written as ~((~x) >> s).
 */
#ifndef TABULA_INTERNAL_H
#define TABULA_INTERNAL_H

#include <stdint.h>

#include "tabula_kernels.h"

#define TABULA_INT48_MIN (-(INT64_C(1) << 47))
#define TABULA_INT48_MAX ((INT64_C(1) << 47) - 1)

/* The range of a signed integer type T (two's complement), as int64_t constants: what a typed body
 * (<family>/tabula_<op>_impl.h) clamps to, derived from the type it is instantiated with. */
#define TABULA_MAX(T) ((int64_t)((UINT64_C(1) << (8u * sizeof(T) - 1u)) - 1u))
#define TABULA_MIN(T) (-TABULA_MAX(T) - 1)

/* TOSA 1.0 zero points (signed types): only an int8 tensor may carry one, any int8 value; every
 * other type's is 0.  TABULA_ZP_MIN(T) <= zp <= TABULA_ZP_MAX(T) is the check. */
#define TABULA_HAS_ZP(T) (sizeof(T) == 1u)
#define TABULA_ZP_MIN(T) (TABULA_HAS_ZP(T) ? -128 : 0)
#define TABULA_ZP_MAX(T) (TABULA_HAS_ZP(T) ? 127 : 0)

/* The int32 whose two's complement bit pattern is u (no implementation-defined conversion). */
static inline int32_t tabula_u32_to_s32(uint32_t u)
{
    return (u <= 0x7FFFFFFFu) ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* The int64 whose two's complement bit pattern is u. */
static inline int64_t tabula_u64_to_s64(uint64_t u)
{
    return (u <= UINT64_C(0x7FFFFFFFFFFFFFFF)) ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* floor(x / 2^s) for 0 <= s <= 63: an arithmetic right shift that does not rely on the
 * implementation-defined >> of negative numbers. */
static inline int64_t tabula_asr64(int64_t x, int32_t s)
{
    return (x >= 0) ? (x >> s) : ~((~x) >> s);
}

/* Clamp a 64-bit value into [lo, hi]. */
static inline int64_t tabula_clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* TOSA 1.0 MUL of one int32 pair: p = a * b exact in int64 (|p| <= 2^62), then for shift > 0
 * (p + 2^(shift-1)) >> shift, flooring (half toward +infinity; the rounding term is at most 2^61, so
 * nothing overflows int64).  A result outside int32 wraps modulo 2^32 (out of contract). */
static inline int32_t tabula_mul_elem_s32(int32_t a, int32_t b, int32_t shift)
{
    int64_t p = (int64_t)a * (int64_t)b;
    if (shift > 0) {
        p = tabula_asr64(p + ((int64_t)1 << (shift - 1)), shift);
    }
    return tabula_u32_to_s32((uint32_t)(uint64_t)p);
}

/*
 * Argument check shared by the RESCALE kernels: count >= 0, channels >= 1, count % channels == 0,
 * input_zp in [izp_lo, izp_hi], output_zp in [ozp_lo, ozp_hi], and every used multiplier in
 * [0, m_end) and shift in [2, 62] (`channels` entries when per_channel != 0, else one).
 */
static inline int tabula_rescale_args_ok(int32_t count, int32_t channels, int32_t input_zp, int32_t izp_lo,
                                         int32_t izp_hi, int32_t output_zp, int32_t ozp_lo, int32_t ozp_hi,
                                         const int32_t *multiplier, const int32_t *shift, int32_t per_channel,
                                         int64_t m_end)
{
    int32_t c, nparams;
    if (count < 0 || channels < 1 || count % channels != 0 || input_zp < izp_lo || input_zp > izp_hi
        || output_zp < ozp_lo || output_zp > ozp_hi) {
        return 0;
    }
    nparams = per_channel ? channels : 1;
    for (c = 0; c < nparams; ++c) {
        if (multiplier[c] < 0 || (int64_t)multiplier[c] >= m_end || shift[c] < 2 || shift[c] > 62) {
            return 0;
        }
    }
    return 1;
}

/* floor(x / 2^s) for 0 <= s <= 31 (tabula_asr64's 32-bit twin). */
static inline int32_t tabula_asr32(int32_t x, int32_t s)
{
    return (x >= 0) ? (x >> s) : ~((~x) >> s);
}

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
    for (o = 0; o < out_c; ++o) {
        const int32_t m = tabula_requant_m(rq, o), s = tabula_requant_s(rq, o);
        if (m < 0 || (int64_t)m >= m_end || s < 2 || s > 62) {
            return 0;
        }
    }
    return 1;
}

/* 1 when every shift of the out_c channels is >= 33 (the usual case; the kernels ask once per call):
 * then tabula_requantize32 needs its 32-bit branch only, and the Helium vector epilogue is exact. */
static inline int32_t tabula_requant_shifts_ge33(const tabula_requant *rq, int32_t out_c)
{
    int32_t o;
    for (o = 0; o < out_c; ++o) {
        if (tabula_requant_s(rq, o) < 33) {
            return 0;
        }
    }
    return 1;
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

/*
 * Window check shared by CONV2D and DEPTHWISE_CONV2D: win != NULL; sizes, kernel, stride and dilation
 * >= 1; pad_top, pad_left >= 0.
 */
static inline int tabula_conv_window_ok(const tabula_window *win)
{
    return win != 0 && win->n >= 1 && win->h >= 1 && win->w >= 1 && win->c >= 1 && win->out_h >= 1
           && win->out_w >= 1 && win->kernel_h >= 1 && win->kernel_w >= 1 && win->stride_y >= 1
           && win->stride_x >= 1 && win->dilation_y >= 1 && win->dilation_x >= 1 && win->pad_top >= 0
           && win->pad_left >= 0;
}

/*
 * Argument check shared by the pooling kernels (TOSA 1.0 MAX_POOL2D / AVG_POOL2D): sizes, kernel,
 * stride >= 1; dilation == 1 (pooling has none); 0 <= pad_top < kernel_h, 0 <= pad_left < kernel_w;
 * the last window starts inside the input.  Together these put at least one real element in every
 * window.
 */
static inline int tabula_pool_window_ok(const tabula_window *win)
{
    if (win == 0) {
        return 0;
    }
    return !(win->n < 1 || win->h < 1 || win->w < 1 || win->c < 1 || win->out_h < 1 || win->out_w < 1
             || win->kernel_h < 1 || win->kernel_w < 1 || win->stride_y < 1 || win->stride_x < 1
             || win->dilation_y != 1 || win->dilation_x != 1
             || win->pad_top < 0 || win->pad_top >= win->kernel_h
             || win->pad_left < 0 || win->pad_left >= win->kernel_w
             || (win->out_h - 1) * win->stride_y - win->pad_top >= win->h
             || (win->out_w - 1) * win->stride_x - win->pad_left >= win->w);
}

/*
 * TOSA 1.0 reciprocal_scale(count) for count >= 1: k = ceil(log2(count)),
 * multiplier = ((2^30 + 1) << k) / count (in [2^30, 2^31)), shift = 30 + k.
 * Python twin: tabula.qmath.reciprocal_scale.
 */
static inline void tabula_reciprocal_scale(int32_t count, int32_t *multiplier, int32_t *shift)
{
    int32_t k = 0;
    while (k < 31 && ((int64_t)1 << k) < (int64_t)count) {
        ++k;
    }
    *multiplier = (int32_t)((((INT64_C(1) << 30) + 1) << k) / (int64_t)count);
    *shift = 30 + k;
}


/*
 * TOSA 1.0 TABLE int16 (apply_lookup_s) of one element `in` through a 513-entry table (entry j for
 * input code -32768 + 128 j): with v = in + 32768, j = v >> 7, f = v & 127,
 *     table[j] * 128 + (table[j+1] - table[j]) * f        (int32, 16.7 fixed point)
 * TOSA REQUIREs the slope table[j+1] - table[j] to fit int16: outside it *bad is set and 0 returned
 * (tabula's table builders never emit one).  Inside it |result| < 2^23: no overflow, no rounding.
 * Used by tabula_table_s16 and tabula_table16_s16.
 */
static inline int32_t tabula_table16_interp(const int16_t *table, int32_t in, int32_t *bad)
{
    const int32_t v = in + 32768; /* 0 .. 65535: a plain shift and mask */
    const int32_t j = v >> 7;
    const int32_t base = table[j];
    const int32_t slope = (int32_t)table[j + 1] - base;
    if (slope < -32768 || slope > 32767) {
        *bad = 1;
        return 0;
    }
    return base * 128 + slope * (v & 127);
}

/* ---- ISA paths: the kernels' Helium (tabula_mve.h, fully_connected/tabula_gemm_s8_mve.h) and DSP
 * (tabula_dsp.h, <family>/tabula_<op>_dsp.h) paths, each beside its portable path in the one function.
 * -DTABULA_PORTABLE_ONLY=1 compiles neither; -DTABULA_NO_ASM=1 keeps them but replaces every inline
 * assembly loop by its C twin (same sums, compiler-scheduled), so both can be tested. ---- */
#if defined(__ARM_FEATURE_MVE) && !defined(TABULA_PORTABLE_ONLY)
#define TABULA_HAVE_MVE 1
#else
#define TABULA_HAVE_MVE 0
#endif

/* The DSP extension (SMLAD, SXTB16: Cortex-M4, M7, M33) on cores without MVE. */
#if defined(__ARM_FEATURE_DSP) && !TABULA_HAVE_MVE && !defined(TABULA_PORTABLE_ONLY)
#define TABULA_HAVE_DSP 1
#else
#define TABULA_HAVE_DSP 0
#endif

/* 1: the ISA paths use their hand-scheduled assembly loops; 0 (-DTABULA_NO_ASM=1): their C twins. */
#if defined(TABULA_NO_ASM)
#define TABULA_USE_ASM 0
#else
#define TABULA_USE_ASM 1
#endif

#endif /* TABULA_INTERNAL_H */
