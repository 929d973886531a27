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

/*
 * Requantization epilogue of the accumulator kernels (CONV2D, FULLY_CONNECTED; contract: manifest.toml,
 * conv2d): requant = {output_zp, out_min, out_max, multiplier[0], shift[0], ..., multiplier[out_c-1],
 * shift[out_c-1]}.  Each output channel o of an accumulator acc becomes
 *     clamp(apply_scale(acc, multiplier[o], shift[o]) + output_zp, out_min, out_max)
 * -- TOSA RESCALE (single rounding, half toward +infinity) then the RESCALE's saturation, and a
 * following CLAMP folded into [out_min, out_max].  tabula_requant_ok checks the block once per call:
 * output_zp in [zp_lo, zp_hi], lo <= out_min <= out_max <= hi, every multiplier in [0, m_end) and
 * every shift in [2, 62].
 */
static inline int tabula_requant_ok(const int32_t *requant, int32_t out_c, int32_t zp_lo, int32_t zp_hi, int64_t lo,
                                    int64_t hi, int64_t m_end)
{
    int32_t o;
    if (requant[0] < zp_lo || requant[0] > zp_hi || requant[1] < lo || requant[2] > hi || requant[1] > requant[2]) {
        return 0;
    }
    for (o = 0; o < out_c; ++o) {
        const int32_t m = requant[3 + 2 * o], s = requant[4 + 2 * o];
        if (m < 0 || (int64_t)m >= m_end || s < 2 || s > 62) {
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

/* apply_scale_32(acc, m, s) + zp clamped to [lo, hi] (|acc * m| < 2^62: no overflow).  The kernels
 * read zp, lo, hi into locals once (requant[0..2]) and m, s per output channel.  For s >= 33 (the
 * usual requantizing shift) in 32-bit operations: with p = acc * m,
 *     floor((p + 2^(s-1)) / 2^s) == (floor(p / 2^(s-1)) + 1) >> 1,  floor(p / 2^(s-1)) == hi32(p) >> (s - 33)
 * (|hi32(p)| < 2^30, so nothing overflows); otherwise in 64 bits as tabula_apply_scale_32. */
static inline int32_t tabula_requant32(int32_t acc, int32_t m, int32_t s, int32_t zp, int32_t lo, int32_t hi)
{
    int32_t v;
    if (s >= 33) {
        const int32_t t = tabula_asr32((int32_t)tabula_asr64((int64_t)acc * m, 32), s - 33);
        v = tabula_asr32(t + 1, 1) + zp;
    } else {
        const int64_t w = tabula_asr64((int64_t)acc * m + ((int64_t)1 << (s - 1)), s) + zp;
        v = w < lo ? lo : (w > hi ? hi : (int32_t)w);
    }
    return v < lo ? lo : (v > hi ? hi : v);
}

/* apply_scale_16(acc, m, s) + zp clamped to [lo, hi] for an int48 accumulator held in int64_t
 * (m < 2^15: exact for every int48 acc; taken modulo 2^64, never undefined, for one outside the IR
 * contract). */
static inline int32_t tabula_requant48(int64_t acc, int32_t m, int32_t s, int32_t zp, int32_t lo, int32_t hi)
{
    const uint64_t x = (uint64_t)acc * (uint64_t)(uint32_t)m + (UINT64_C(1) << (s - 1));
    const int64_t v = tabula_asr64(tabula_u64_to_s64(x), s) + zp;
    return v < lo ? lo : (v > hi ? hi : (int32_t)v);
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

/* ---- Helium (MVE) helpers: compiled for M-profile cores with MVE unless TABULA_PORTABLE_ONLY ---- */
#if defined(__ARM_FEATURE_MVE) && !defined(TABULA_PORTABLE_ONLY)
#include <arm_mve.h>
#define TABULA_HAVE_MVE 1

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
#else
#define TABULA_HAVE_MVE 0
#endif

/* ---- DSP extension (SMLAD, SXTB16: Cortex-M4, M7, M33) on cores without MVE, unless
 * TABULA_PORTABLE_ONLY; its helpers are in tabula_dsp.h ---- */
#if defined(__ARM_FEATURE_DSP) && !TABULA_HAVE_MVE && !defined(TABULA_PORTABLE_ONLY)
#define TABULA_HAVE_DSP 1
#else
#define TABULA_HAVE_DSP 0
#endif

#endif /* TABULA_INTERNAL_H */
