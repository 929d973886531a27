/*
 * Int16 table op with ramps, fused (codegen's TABLE16 for the exact piecewise-linear activations).
 * Contract: manifest.toml (table); Python twin: tabula.qmath.table16_apply.
 *
 * The TOSA sequence of a tabula.qmath.Table16Plan with clamped linear ramps and, for hardswish, a
 * product by the input, in one pass.  With the term sums H and L of tabula_table16_impl.h, per element x:
 *     acc = H * 2^7 + L                                                   (RESCALE x 2^7, ADD)
 *         + sum_r sign_r * apply_scale_32(clamp(x, lo_r, hi_r), m_r, s_r)  (CLAMP, RESCALE, ADD/SUB)
 *     final_step = {mul_shift, m, s}; mul_shift >= 0 (TOSA MUL int32):
 *         acc = (acc * x + 2^(mul_shift-1)) >> mul_shift        (no rounding term for mul_shift 0)
 *     out = saturate16(apply_scale_32(acc, m, s))                         (RESCALE)
 * with apply_scale_32(v, m, s) = (v * m + 2^(s-1)) >> s, 64-bit throughout.  For every plan tabula
 * builds (checked on every code: int32 sums, TOSA's REQUIREs) this is the op sequence bit for bit.
 */
#include "tabula_table16_impl.h"

/* apply_scale_32 on a 64-bit value (|v * m| < 2^62 for every plan tabula builds) */
static int64_t table16_scale(int64_t v, int32_t m, int32_t s)
{
    return tabula_asr64(v * m + (INT64_C(1) << (s - 1)), s);
}

tabula_status tabula_table16_ramps_s16(const int16_t *input, int32_t count, int32_t n_terms, const int32_t *zoom,
                                       const int32_t *centre, const int16_t *const *hi, const int16_t *const *lo,
                                       int32_t n_ramps, const int32_t *ramps, const int32_t *final_step,
                                       int16_t *output)
{
    int32_t n, t, bad = 0;
    const int32_t *const cen = centre != NULL ? centre : tabula_table16_no_centre;
    if (count < 0 || n_ramps < 0 || (n_terms == 0 && n_ramps == 0) || (n_ramps > 0 && ramps == NULL)
        || final_step == NULL || !tabula_table16_terms_ok(n_terms, zoom, centre, hi)) {
        return TABULA_ERR_ARG;
    }
    for (t = 0; t < n_ramps; ++t) {
        const int32_t *r = ramps + 5 * t;
        if (r[0] > r[1] || r[2] < 0 || r[3] < 2 || r[3] > 62 || (r[4] != 1 && r[4] != -1)) {
            return TABULA_ERR_ARG;
        }
    }
    if (final_step[0] < -1 || final_step[0] > 62 || final_step[1] < 0 || final_step[2] < 2 || final_step[2] > 62) {
        return TABULA_ERR_ARG;
    }
    for (n = 0; n < count; ++n) {
        const int32_t x = input[n];
        int32_t h = 0, l = 0;
        int64_t acc;
        tabula_table16_terms(x, n_terms, zoom, cen, hi, lo, &h, &l, &bad);
        if (bad) {
            return TABULA_ERR_ARG;
        }
        acc = (int64_t)h * 128 + l; /* RESCALE x 2^7 per term is exact: the sum first */
        for (t = 0; t < n_ramps; ++t) {
            const int32_t *r = ramps + 5 * t;
            const int32_t v = x < r[0] ? r[0] : (x > r[1] ? r[1] : x);
            acc += r[4] * table16_scale(v, r[2], r[3]);
        }
        if (final_step[0] >= 0) {
            acc *= x;
            if (final_step[0] > 0) {
                acc = tabula_asr64(acc + (INT64_C(1) << (final_step[0] - 1)), final_step[0]);
            }
        }
        output[n] = (int16_t)tabula_clamp64(table16_scale(acc, final_step[1], final_step[2]), -32768, 32767);
    }
    return TABULA_OK;
}
