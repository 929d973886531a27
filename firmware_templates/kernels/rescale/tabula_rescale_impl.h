/*
 * One body for every RESCALE kernel tabula_rescale_<in>_<out> and tabula_rescale_clamp_<in>_<out>
 * (contract: manifest.toml, rescale).  The variant file rescale/tabula_rescale[_clamp]_<in>_<out>.c
 * defines, then includes this file:
 *     TABULA_FN     the kernel's name (tabula_rescale_<in>_<out>: clamps to the output type), or
 *     TABULA_FN_CLAMP  the name of the clamping kernel (tabula_rescale_clamp_<in>_<out>: takes
 *                   out_min, out_max, the fused CLAMP's bounds)
 *     TABULA_T_IN   int8_t, int16_t, int32_t or int64_t (TOSA int48)
 *     TABULA_T_OUT  int8_t, int16_t or int32_t
 * Everything else follows from the two types: the zero points only an int8 side may carry, the
 * output range, and for an int48 input apply_scale_16 (multiplier < 2^15) instead of apply_scale_32.
 *
 * Per element: x = in - input_zp; v = apply_scale(x, m[c], s[c]) (c = i % channels when
 * per_channel, else 0); out = clamp(v + output_zp) to [out_min, out_max] (the output type's range for
 * tabula_rescale_<in>_<out>).
 *
 * Two paths.  The general one: 64-bit arithmetic per element, nothing overflows for any value of the
 * input type.  The narrowing one (int32 / int48 in, int8 / int16 out: the precision boundaries of mixed
 * precision), tabula_rescale_narrow below: 32-bit arithmetic per element (tabula_rescale_q32: a
 * saturating left shift, the high word of a 32 x 32 product, a rounding right shift), 4 channels per
 * Helium vector (VQSHL, VMULH, VRSHL) on MVE cores, an int48 element outside int32 the 64-bit way.
 */
#if (!defined(TABULA_FN) && !defined(TABULA_FN_CLAMP)) || !defined(TABULA_T_IN) || !defined(TABULA_T_OUT)
#error "define TABULA_FN (or TABULA_FN_CLAMP), TABULA_T_IN and TABULA_T_OUT before including tabula_rescale_impl.h"
#endif

#include "tabula_internal.h"

#if TABULA_HAVE_MVE
#include <arm_mve.h>
#endif

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

/* TOSA int48 input (held in int64_t): RESCALE with scale32 = false */
#define TABULA_IN_INT48 (sizeof(TABULA_T_IN) == sizeof(int64_t))

/* int32 / int48 in, int8 / int16 out: the narrowing path applies */
#define TABULA_NARROW (sizeof(TABULA_T_IN) >= sizeof(int32_t) && sizeof(TABULA_T_OUT) <= sizeof(int16_t))

/*
 * apply_scale(x, M, S) = floor((x M + 2^(S-1)) / 2^S) of an int32 x in 32-bit operations, for M in
 * [0, 2^31) and S >= 2 (apply_scale_32: M = m, S = s; apply_scale_16 of an x that fits int32:
 * M = m 2^16 < 2^31, S = s + 16, the same value as x m 2^16 / 2^(s+16)), when the result is then
 * clamped to a range inside [-2^28 + 2^8, 2^28 - 2^8] (int16, or int8 plus a zero point).  Per channel,
 * once, (M, S) become (mq, bq, nq):
 *   S >= 33: mq = M, bq = 0, nq = min(S - 32, 31);
 *   S <= 32: k = 33 - S; a = the largest a <= k with M 2^a < 2^31 (k when M = 0); mq = M 2^a,
 *            bq = k - a, nq = 1;
 * and per element
 *   t = floor(sat32(x 2^bq) mq / 2^32)   (VQSHL, VMULH: |t| <= 2^30)
 *   v = floor((t + 2^(nq-1)) / 2^nq)    (VRSHL by -nq)
 * Proof.  Without saturation x' mq = x M 2^k (k = 0 when S >= 33), and with 32 + nq = S + k (S <= 63)
 * and floor((floor(y) + j) / d) = floor((y + j) / d) for integers j, d > 0:
 * v = floor((x M 2^k + 2^(S+k-1)) / 2^(S+k)) = apply_scale(x, M, S).  For S >= 64 (nq = 31): |x M| < 2^62
 * <= 2^(S-1), so apply_scale is 0, and so is v: t + 2^30 is in [0, 2^31).  Saturation happens only when
 * bq > 0, so a < k and mq >= 2^30: then |x 2^bq| >= 2^31 makes |x M 2^k| >= 2^61 and both the exact
 * value and v (x' = -2^31 or 2^31 - 1) have magnitude >= 2^28 - 1 with x's sign: both clamp to the same
 * end.
 */
static inline void tabula_rescale_q32(int32_t M, int32_t S, int32_t *mq, int32_t *bq, int32_t *nq)
{
    int32_t k, a = 0;
    if (S >= 33) {
        *mq = M;
        *bq = 0;
        *nq = S - 32 < 31 ? S - 32 : 31;
        return;
    }
    k = 33 - S;
    while (a < k && (M == 0 || M < (INT32_C(1) << (30 - a)))) { /* M 2^(a+1) < 2^31 */
        ++a;
    }
    *mq = (int32_t)((uint32_t)M << a);
    *bq = k - a;
    *nq = 1;
}

/* One element the 32-bit way (tabula_rescale_q32): clamp(apply_scale(x, M, S) + zp, lo, hi).  The scalar
 * twin of VQSHL: x 2^bq is computed modulo 2^32 and, when it does not fit int32 (x > lim or x < -lim - 1,
 * only possible for bq > 0), the result is the clamp's end of x's sign -- what the saturated x' gives
 * (the proof above).  (As a saturated x' itself, gcc 12 no longer sees a 32 x 32 product: a 64 x 64
 * multiply instead of SMULL.) */
static inline int32_t tabula_rescale_elem_q32(int32_t x, int32_t mq, int32_t bq, int32_t nq, int32_t zp, int32_t lo,
                                              int32_t hi)
{
    const int32_t lim = INT32_MAX >> bq, xs = tabula_u32_to_s32((uint32_t)x << bq);
    /* floor(xs mq / 2^32): the high word of the two's complement product (SMULL) */
    const int32_t t = tabula_u32_to_s32((uint32_t)((uint64_t)((int64_t)xs * mq) >> 32));
    int32_t v = tabula_asr32(tabula_asr32(t, nq - 1) + 1, 1) + zp; /* floor((t + 2^(n-1)) / 2^n), no overflow */
    v = v < lo ? lo : (v > hi ? hi : v);
    v = x > lim ? hi : v;
    return x < -lim - 1 ? lo : v;
}

/* One int48 element the 64-bit way: clamp(apply_scale_16(x, m, s) + zp, lo, hi); 0 when x is outside
 * int48 (the kernel then returns TABULA_ERR_ARG). */
static inline int tabula_rescale_elem48(int64_t x, int32_t m, int32_t s, int32_t zp, int32_t lo, int32_t hi,
                                        int32_t *out)
{
    int64_t v;
    if (x < TABULA_INT48_MIN || x > TABULA_INT48_MAX) {
        return 0;
    }
    v = tabula_asr64(x * (int64_t)m + ((int64_t)1 << (s - 1)), s) + zp; /* |x m| < 2^62 */
    *out = (int32_t)tabula_clamp64(v, lo, hi);
    return 1;
}

#if TABULA_HAVE_MVE
/*
 * The Helium rows of tabula_rescale_narrow_block: rows x lanes (4, or 1..3 for an int32 input: predicated)
 * elements at input[r * stride + l] -> output[r * stride + l], lane l by vm, vb, vn (mq, bq, -nq of
 * tabula_rescale_q32): VQSHL (when shift_x), VMULH, VRSHL, + zp, VMAX / VMIN to [lo, hi], VSTRB / VSTRH.32.
 * An int48 input is read as 4 int64 by VLD2 (low, high words) and computed from the low words; returns
 * nonzero when some element's high word is not its low word's sign (it did not fit int32: the caller
 * redoes the block), 0 otherwise (always for an int32 input).
 */
/* no-auto-inc-dec: gcc 12 otherwise folds the row step (a register) into VLD21's writeback, an
 * addressing mode VLD21 does not have (the assembler refuses it); the function is then called, not inlined. */
__attribute__((optimize("no-auto-inc-dec"))) static uint32_t tabula_rescale_rows_mve(const TABULA_T_IN *input, int32_t rows, int32_t stride, int32_t lanes,
                                               int32x4_t vm, int32x4_t vb, int32x4_t vn, int32_t zp, int32_t lo,
                                               int32_t hi, int shift_x, TABULA_T_OUT *output)
{
    const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
    uint32x4_t wide = vdupq_n_u32(0u);
    int32_t r;
    for (r = 0; r < rows; ++r, input += stride, output += stride) {
        int32x4_t x;
        if (TABULA_IN_INT48) {
            const int32x4x2_t lh = vld2q_s32((const int32_t *)(const void *)input);
            wide = vorrq_u32(wide, vreinterpretq_u32_s32(veorq_s32(lh.val[1], vshrq_n_s32(lh.val[0], 31))));
            x = lh.val[0];
        } else if (lanes == 4) {
            x = vldrwq_s32((const int32_t *)(const void *)input);
        } else {
            x = vldrwq_z_s32((const int32_t *)(const void *)input, vctp32q((uint32_t)lanes));
        }
        if (shift_x) {
            x = vqshlq_s32(x, vb);
        }
        x = vrshlq_s32(vmulhq_s32(x, vm), vn);
        x = vminq_s32(vmaxq_s32(vaddq_n_s32(x, zp), vlo), vhi);
        if (lanes == 4) { /* (gcc 12 ICEs on a predicate that folds to a constant: no vctp32q(4)) */
            if (sizeof(TABULA_T_OUT) == sizeof(int16_t)) {
                vstrhq_s32((int16_t *)(void *)output, x);
            } else {
                vstrbq_s32((int8_t *)(void *)output, x);
            }
        } else if (sizeof(TABULA_T_OUT) == sizeof(int16_t)) {
            vstrhq_p_s32((int16_t *)(void *)output, x, vctp32q((uint32_t)lanes));
        } else {
            vstrbq_p_s32((int8_t *)(void *)output, x, vctp32q((uint32_t)lanes));
        }
    }
    return vmaxvq_u32(0u, wide);
}
#endif

/*
 * The narrowing path over rows x lanes elements: element (r, l) at input[r * stride + l] (l < lanes <=
 * 4) is rescaled by lane l's m[l], s[l] (the kernel's multiplier and shift; mq, bq, nq their
 * tabula_rescale_q32 form) into output[r * stride + l].  Returns 0 when an int48 element is outside
 * int48 (some elements then written), else 1.  input and output must not overlap.
 */
static int tabula_rescale_narrow_block(const TABULA_T_IN *input, int32_t rows, int32_t stride, int32_t lanes,
                                       const int32_t *m, const int32_t *s, const int32_t *mq, const int32_t *bq,
                                       const int32_t *nq, int32_t zp, int32_t lo, int32_t hi, TABULA_T_OUT *output)
{
    int32_t r, l, v;
#if TABULA_HAVE_MVE
    if (lanes == 4 || !TABULA_IN_INT48) {
        const int32x4_t vm = vldrwq_s32(mq), vb = vldrwq_s32(bq), vn = vnegq_s32(vldrwq_s32(nq));
        /* VQSHL only when a lane shifts x (S <= 32): without it the loop keeps every vector in a register */
        const uint32_t wide = vmaxvq_u32(0u, vreinterpretq_u32_s32(vb))
                                  ? tabula_rescale_rows_mve(input, rows, stride, lanes, vm, vb, vn, zp, lo, hi, 1, output)
                                  : tabula_rescale_rows_mve(input, rows, stride, lanes, vm, vb, vn, zp, lo, hi, 0, output);
        /* Done, unless an int48 element did not fit int32: then the whole block again the scalar way below
         * (it writes every output of the block; the input is intact, the arena never overlaps the two). */
        if (!TABULA_IN_INT48 || wide == 0u) {
            return 1;
        }
    }
#endif
    for (l = 0; l < lanes; ++l) {
        const TABULA_T_IN *x = input + l;
        TABULA_T_OUT *y = output + l;
        const int32_t lm = mq[l], lb = bq[l], ln = nq[l];
        for (r = 0; r < rows; ++r, x += stride, y += stride) {
            const int64_t x64 = (int64_t)*x;
            if (!TABULA_IN_INT48 || (x64 >= INT32_MIN && x64 <= INT32_MAX)) {
                v = tabula_rescale_elem_q32((int32_t)x64, lm, lb, ln, zp, lo, hi);
            } else if (!tabula_rescale_elem48(x64, m[l], s[l], zp, lo, hi, &v)) {
                return 0;
            }
            *y = (TABULA_T_OUT)v;
        }
    }
    return 1;
}

/*
 * The narrowing path of the whole tensor (arguments checked): per channel, 4 channels at a time over
 * every row (the last 1..3 channels: a predicated block, or for an int48 input per lane); per tensor,
 * the tensor as rows of 4 (Helium) or of 1, the last count % 4 elements a block of their own.
 */
static int tabula_rescale_narrow(const TABULA_T_IN *input, int32_t count, int32_t channels, int32_t output_zp,
                                 const int32_t *multiplier, const int32_t *shift, int32_t per_channel, int32_t lo,
                                 int32_t hi, TABULA_T_OUT *output)
{
    const int32_t nch = per_channel ? channels : 1;
    const int32_t m16 = TABULA_IN_INT48 ? 16 : 0; /* apply_scale_16 as apply_scale_32 of m 2^16, s + 16 */
    int32_t m[4], s[4], mq[4], bq[4], nq[4], c, l;
    for (c = 0; c < nch; c += 4) {
        const int32_t lanes = nch - c < 4 ? nch - c : 4;
        for (l = 0; l < 4; ++l) { /* lanes past the last channel repeat it (computed, never stored) */
            const int32_t p = c + (l < lanes ? l : lanes - 1);
            m[l] = multiplier[p];
            s[l] = shift[p];
            tabula_rescale_q32((int32_t)((uint32_t)m[l] << m16), s[l] + m16, &mq[l], &bq[l], &nq[l]);
        }
        if (per_channel) {
            if (!tabula_rescale_narrow_block(input + c, count / channels, channels, lanes, m, s, mq, bq, nq,
                                             output_zp, lo, hi, output + c)) {
                return 0;
            }
        } else {
            const int32_t w = TABULA_HAVE_MVE ? 4 : 1, full = count / w * w;
            if (!tabula_rescale_narrow_block(input, count / w, w, w, m, s, mq, bq, nq, output_zp, lo, hi, output)
                || (full < count && !tabula_rescale_narrow_block(input + full, 1, 0, count - full, m, s, mq, bq, nq,
                                                                 output_zp, lo, hi, output + full))) {
                return 0;
            }
        }
    }
    return 1;
}

/* The kernel with the output clamped to [lo, hi] (inside the output type's range; checked by the caller). */
static tabula_status tabula_rescale_body(const TABULA_T_IN *input, int32_t count, int32_t channels, int32_t input_zp,
                                         int32_t output_zp, const int32_t *multiplier, const int32_t *shift,
                                         int32_t per_channel, int32_t lo, int32_t hi, TABULA_T_OUT *output)
{
    /* A constant 0 unless the input is int8 (the check below holds other zero points at 0), so the
     * compiler drops the subtraction from the int32 / int48 kernels. */
    const int32_t izp = TABULA_HAS_ZP(TABULA_T_IN) ? input_zp : 0;
    int32_t i, c = 0;
    if (!tabula_rescale_args_ok(count, channels, input_zp, TABULA_ZP_MIN(TABULA_T_IN), TABULA_ZP_MAX(TABULA_T_IN),
                                output_zp, TABULA_ZP_MIN(TABULA_T_OUT), TABULA_ZP_MAX(TABULA_T_OUT), multiplier,
                                shift, per_channel, TABULA_IN_INT48 ? INT64_C(1) << 15 : INT64_C(1) << 31)) {
        return TABULA_ERR_ARG;
    }
    if (TABULA_NARROW) {
        return tabula_rescale_narrow(input, count, channels, output_zp, multiplier, shift, per_channel, lo, hi, output)
                   ? TABULA_OK
                   : TABULA_ERR_ARG; /* an int48 element outside int48 */
    }
    for (i = 0; i < count; ++i) {
        const int32_t p = per_channel ? c : 0;
        const int64_t x = (int64_t)input[i] - izp;
        int64_t v;
        if (TABULA_IN_INT48) {
            if (x < TABULA_INT48_MIN || x > TABULA_INT48_MAX) {
                return TABULA_ERR_ARG; /* the elements before it have been written */
            }
            v = tabula_apply_scale_16(x, multiplier[p], shift[p]);
        } else {
            v = tabula_apply_scale_32((int32_t)x, multiplier[p], shift[p]);
        }
        output[i] = (TABULA_T_OUT)tabula_clamp64(v + output_zp, lo, hi);
        if (++c == channels) {
            c = 0;
        }
    }
    return TABULA_OK;
}

#ifdef TABULA_FN
tabula_status TABULA_FN(const TABULA_T_IN *input, int32_t count, int32_t channels, int32_t input_zp,
                        int32_t output_zp, const int32_t *multiplier, const int32_t *shift, int32_t per_channel,
                        TABULA_T_OUT *output)
{
    return tabula_rescale_body(input, count, channels, input_zp, output_zp, multiplier, shift, per_channel,
                               (int32_t)TABULA_MIN(TABULA_T_OUT), (int32_t)TABULA_MAX(TABULA_T_OUT), output);
}
#endif

#ifdef TABULA_FN_CLAMP
tabula_status TABULA_FN_CLAMP(const TABULA_T_IN *input, int32_t count, int32_t channels, int32_t input_zp,
                              int32_t output_zp, const int32_t *multiplier, const int32_t *shift,
                              int32_t per_channel, int32_t out_min, int32_t out_max, TABULA_T_OUT *output)
{
    if (out_min < TABULA_MIN(TABULA_T_OUT) || out_max > TABULA_MAX(TABULA_T_OUT) || out_min > out_max) {
        return TABULA_ERR_ARG;
    }
    return tabula_rescale_body(input, count, channels, input_zp, output_zp, multiplier, shift, per_channel, out_min,
                               out_max, output);
}
#endif
