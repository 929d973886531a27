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

/* Store int32 accumulator acc of output channel o at output element `at` of an int8-input accumulator
 * kernel: requantized to int8 (requant's channel o, zp / lo / hi read once by the caller) or, with
 * requant == NULL, the accumulator itself. */
static inline void tabula_store_acc32(void *output, int32_t at, int32_t acc, const int32_t *requant, int32_t o,
                                      int32_t zp, int32_t lo, int32_t hi)
{
    if (requant) {
        ((int8_t *)output)[at] = (int8_t)tabula_requant32(acc, requant[3 + 2 * o], requant[4 + 2 * o], zp, lo, hi);
    } else {
        ((int32_t *)output)[at] = acc;
    }
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

/*
 * Vectorized requantization of 4 int32 accumulators (lanes) of output channels o .. o+3: lane l
 * becomes clamp(apply_scale_32(acc[l], m, s) + zp, lo, hi) with m, s = requant[3 + 2 (o+l)],
 * requant[4 + 2 (o+l)] and zp, lo, hi = requant[0..2], bit-exact with tabula_requant32 for every
 * shift s >= 33 (callers check that once per call with tabula_requant_shifts_min and use
 * tabula_requant32 otherwise: s == 32 would need VRMULH, (p + 2^31) >> 32, and a per-lane select,
 * six more instructions per block for a shift real layers do not have).  Proof, with p = acc * m
 * (|p| < 2^62) and floor((floor(y) + k) / d) == floor((y + k) / d) for integers k, d > 0:
 * t = VMULH(acc, m) = floor(p / 2^32) (|t| < 2^30); VRSHL(t, 32 - s) is the rounding right shift by
 * n = s - 32 in [1, 30], floor((t + 2^(n-1)) / 2^n) = floor((floor(p / 2^32) + 2^(s-33)) / 2^(s-32))
 * = floor((p + 2^(s-1)) / 2^s): TOSA's single rounding (half toward +infinity) exactly.
 * Then + zp (|v| < 2^30: no overflow), VMAX / VMIN to [lo, hi] (zp, lo, hi passed as values: a byte
 * store cannot force them to be reloaded), and VSTRB.32 writes the low byte of the first `count`
 * lanes (1..4; the others are not loaded either: predicated gathers).
 */
static inline void tabula_requant4_s8_mve(int32x4_t acc, const int32_t *requant, int32_t o, int32_t count,
                                          int32_t zp, int32_t lo, int32_t hi, int8_t *out)
{
    const uint32x4_t pairs = vidupq_n_u32(0u, 2); /* 0, 2, 4, 6: word offsets of the {m, s} pairs */
    int32x4_t m, s, v;
    mve_pred16_t p = 0;
    if (count == 4) { /* (gcc 12 ICEs on a predicate that folds to a constant: no vctp32q(4)) */
        m = vldrwq_gather_shifted_offset_s32(requant + 3 + 2 * o, pairs);
        s = vldrwq_gather_shifted_offset_s32(requant + 4 + 2 * o, pairs);
    } else {
        p = vctp32q((uint32_t)count);
        m = vldrwq_gather_shifted_offset_z_s32(requant + 3 + 2 * o, pairs, p);
        s = vldrwq_gather_shifted_offset_z_s32(requant + 4 + 2 * o, pairs, p);
    }
    v = vrshlq_s32(vmulhq_s32(acc, m), vsubq_s32(vdupq_n_s32(32), s));
    v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), vdupq_n_s32(lo)), vdupq_n_s32(hi));
    if (count == 4) {
        vstrbq_s32(out, v);
    } else {
        vstrbq_p_s32(out, v, p);
    }
}

/* The smallest shift of a requant block's out_c channels (the vector epilogue needs >= 33). */
static inline int32_t tabula_requant_shifts_min(const int32_t *requant, int32_t out_c)
{
    int32_t o, s = 62;
    for (o = 0; o < out_c; ++o) {
        s = requant[4 + 2 * o] < s ? requant[4 + 2 * o] : s;
    }
    return s;
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

/* Write a block of nch accumulators of channels o..: int32 (requant == NULL) or requantized to int8,
 * by the vector epilogue when vec_rq (every shift >= 33), else by tabula_requant32. */
static inline void tabula_acc4_store_s8(const int32_t *acc, int32_t o, int32_t nch, const int32_t *requant,
                                        int vec_rq, void *out)
{
    int32_t l;
    if (requant && vec_rq) {
        int32x4_t v = vdupq_n_s32(acc[0]);
        v = vsetq_lane_s32(acc[1], v, 1);
        v = vsetq_lane_s32(acc[2], v, 2);
        v = vsetq_lane_s32(acc[3], v, 3);
        tabula_requant4_s8_mve(v, requant, o, nch, requant[0], requant[1], requant[2], (int8_t *)out + o);
        return;
    }
    for (l = 0; l < nch; ++l) {
        if (requant) {
            ((int8_t *)out)[o + l] = (int8_t)tabula_requant32(acc[l], requant[3 + 2 * (o + l)], requant[4 + 2 * (o + l)],
                                                              requant[0], requant[1], requant[2]);
        } else {
            ((int32_t *)out)[o + l] = acc[l];
        }
    }
}

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
         * accumulators from acc[] (bias copied in first), 3 row pointers, a low-overhead loop (DLS/LE)
         * of 1 x load + 4 weight loads + 4 VMLADAVA per 16 bytes, 2 STRD, x rewound, the weight
         * pointer runs on.  Same sums modulo 2^32 as the C below. */
        int32_t a0, a1, a2, a3, nblk = full >> 2;
        const int8_t *w1, *w2, *w3;
        int32_t *ap = acc;
        for (o = 0; o < full; o += 4) {
            const int32x4_t b4 = bias ? vldrwq_s32(bias + o) : vdupq_n_s32(0);
            vstrwq_s32(acc + o, b4);
        }
        __asm__ volatile(
            "1:\n\t"
            "ldrd %[a0], %[a1], [%[ap]]\n\t"
            "ldrd %[a2], %[a3], [%[ap], #8]\n\t"
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
            "subs %[n], %[n], #1\n\t"
            "bne 1b\n\t"
            : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [w1] "=&r"(w1), [w2] "=&r"(w2),
              [w3] "=&r"(w3), [x] "+r"(x), [w] "+r"(w), [ap] "+r"(ap), [n] "+r"(nblk)
            : [len] "r"(len)
            : "lr", "q0", "q1", "q2", "q3", "memory", "cc");
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

/*
 * Requantize n int32 accumulators of output channels o0 .. o0+n-1 to int8 (out[0..n)) with the vector
 * epilogue (tabula_requant4_s8_mve's arithmetic; every shift >= 33): 4 channels per step, the {m, s}
 * pairs deinterleaved by one VLD2 (VLD20 + VLD21), a last 1..3 through the predicated gathers.
 */
static inline void tabula_requant_row_s8_mve(const int32_t *acc, int32_t n, const int32_t *requant, int32_t o0,
                                             int8_t *out)
{
    const int32_t zp = requant[0];
    const int32x4_t lo = vdupq_n_s32(requant[1]), hi = vdupq_n_s32(requant[2]), c32 = vdupq_n_s32(32);
    int32_t o;
    for (o = 0; o + 4 <= n; o += 4) {
        const int32x4x2_t ms = vld2q_s32(requant + 3 + 2 * (o0 + o));
        int32x4_t v = vrshlq_s32(vmulhq_s32(vldrwq_s32(acc + o), ms.val[0]), vsubq_s32(c32, ms.val[1]));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), lo), hi);
        vstrbq_s32(out + o, v);
    }
    if (o < n) {
        tabula_requant4_s8_mve(vldrwq_z_s32(acc + o, vctp32q((uint32_t)(n - o))), requant, o0 + o, n - o, zp,
                               requant[1], requant[2], out + o);
    }
}

/* Output channels per tile of tabula_gemm_s8_mve's int32 scratch (256 bytes of stack). */
#define TABULA_GEMM_TILE 64

/*
 * GEMM over `rows` int8 input rows (x + r*len, len bytes each, e.g. the NHWC pixels of a 1x1 conv or
 * the batch of a FULLY_CONNECTED) against every output channel's weight row (w[o*len ..), out_c
 * rows): out[r*out_c + o] = bias[o] + sum_j x[r*len + j] w[o*len + j] modulo 2^32, as int32 or
 * requantized (requant; vec_rq: every shift >= 33, the vector epilogue, else tabula_requant32).
 * Per row and tile of up to TABULA_GEMM_TILE channels: tabula_gemv_acc_s8_mve into a stack scratch
 * (or straight into an int32 output), then tabula_requant_row_s8_mve over it.
 */
static inline void tabula_gemm_s8_mve(int32_t rows, const int8_t *x, int32_t len, const int8_t *w, int32_t out_c,
                                      const int32_t *bias, const int32_t *requant, int vec_rq, void *out)
{
    int32_t r, t, l, acc[TABULA_GEMM_TILE];
    for (r = 0; r < rows; ++r, x += len) {
        for (t = 0; t < out_c; t += TABULA_GEMM_TILE) {
            const int32_t nt = out_c - t < TABULA_GEMM_TILE ? out_c - t : TABULA_GEMM_TILE;
            const int32_t *bt = bias ? bias + t : 0;
            if (!requant) {
                tabula_gemv_acc_s8_mve(x, w + t * len, len, nt, bt, (int32_t *)out + r * out_c + t);
                continue;
            }
            tabula_gemv_acc_s8_mve(x, w + t * len, len, nt, bt, acc);
            if (vec_rq) {
                tabula_requant_row_s8_mve(acc, nt, requant, t, (int8_t *)out + r * out_c + t);
            } else {
                for (l = 0; l < nt; ++l) {
                    ((int8_t *)out)[r * out_c + t + l] = (int8_t)tabula_requant32(
                        acc[l], requant[3 + 2 * (t + l)], requant[4 + 2 * (t + l)], requant[0], requant[1], requant[2]);
                }
            }
        }
    }
}

/* One input vector x[0..len) against every output channel: tabula_gemm_s8_mve of one row. */
static inline void tabula_gemv_s8_mve(const int8_t *x, int32_t len, const int8_t *w, int32_t out_c,
                                      const int32_t *bias, const int32_t *requant, int vec_rq, void *out)
{
    tabula_gemm_s8_mve(1, x, len, w, out_c, bias, requant, vec_rq, out);
}

/* dst[0..n) = src[0..n) (16 bytes per predicated VLDRB / VSTRB). */
static inline void tabula_copy_s8_mve(int8_t *dst, const int8_t *src, int32_t n)
{
    int32_t j;
    for (j = 0; j < n; j += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)(n - j));
        vstrbq_p_s8(dst + j, vldrbq_z_s8(src + j, p), p);
    }
}

/* dst[0..n) = value. */
static inline void tabula_fill_s8_mve(int8_t *dst, int32_t value, int32_t n)
{
    const int8x16_t v = vdupq_n_s8((int8_t)value);
    int32_t j;
    for (j = 0; j < n; j += 16) {
        vstrbq_p_s8(dst + j, v, vctp8q((uint32_t)(n - j)));
    }
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
