/*
 * Int16 table op, fused (codegen's TABLE16).  Contract: manifest.toml (table); Python twin:
 * tabula.qmath.table16_apply.
 *
 * What the TOSA ops tabula lowers an int16 table op to compute together (tabula.qmath.Table16Plan;
 * the IR keeps the TOSA ops, codegen calls this once instead, so the int32 intermediates need no
 * arena, the shift tables no flash, and the element loop runs once).  With interp =
 * tabula_table16_interp (TOSA 1.0 TABLE int16, tabula_internal.h), for each element x:
 *     idx_t = saturate16((x - centre[t]) * 2^zoom[t])          (RESCALE, or shift TABLE + RESCALE; exact)
 *   narrow (final_step == NULL):
 *     out = saturate16(floor((sum_t interp(hi[t], idx_t) + 2^6) / 2^7))          (ADD, RESCALE x 2^-7)
 *   wide:
 *     acc = sum_t (interp(hi[t], idx_t) * 2^7 + interp(lo[t], idx_t))            (RESCALE x 2^7, ADD)
 *         + sum_r sign_r * apply_scale_32(clamp(x, lo_r, hi_r), m_r, s_r)          (CLAMP, RESCALE, ADD/SUB)
 *     final_step = {mul_shift, m, s}: with mul_shift >= 0 (TOSA MUL int32)
 *         acc = (acc * x + 2^(mul_shift-1)) >> mul_shift        (no rounding term for mul_shift 0)
 *     out = saturate16(apply_scale_32(acc, m, s))                                 (RESCALE)
 * with apply_scale_32(v, m, s) = (v * m + 2^(s-1)) >> s.  Sums are 64-bit, so nothing wraps; for every
 * plan tabula builds (checked on every code at build time: sums inside int32, TOSA's REQUIREs hold)
 * this equals the TOSA op sequence bit for bit.
 */
#include <stddef.h>

#include "tabula_internal.h"

#define TABULA_TABLE16_MAX_TERMS 8

/* apply_scale_32 on a 64-bit value (|v * m| < 2^62 for every plan tabula builds) */
static int64_t table16_scale(int64_t v, int32_t m, int32_t s)
{
    return tabula_asr64(v * m + (INT64_C(1) << (s - 1)), s);
}

tabula_status tabula_table16_s16(const int16_t *input, int32_t count, int32_t n_terms, const int32_t *zoom,
                                 const int32_t *centre, const int16_t *const *hi, const int16_t *const *lo,
                                 int32_t n_ramps, const int32_t *ramps, const int32_t *final_step, int16_t *output)
{
    int32_t n, t, split = 0, bad = 0;
    if (count < 0 || n_terms < 0 || n_terms > TABULA_TABLE16_MAX_TERMS || n_ramps < 0
        || (n_terms == 0 && n_ramps == 0) || (n_ramps > 0 && (ramps == NULL || final_step == NULL))) {
        return TABULA_ERR_ARG;
    }
    for (t = 0; t < n_terms; ++t) {
        if (zoom == NULL || zoom[t] < 0 || zoom[t] > 7 || hi == NULL || hi[t] == NULL
            || (centre != NULL && (centre[t] % 128 != 0 || centre[t] < -65536 || centre[t] > 65536))) {
            return TABULA_ERR_ARG;
        }
        split |= (lo != NULL && lo[t] != NULL);
    }
    for (t = 0; t < n_ramps; ++t) {
        const int32_t *r = ramps + 5 * t;
        if (r[0] > r[1] || r[2] < 0 || r[3] < 2 || r[3] > 62 || (r[4] != 1 && r[4] != -1)) {
            return TABULA_ERR_ARG;
        }
    }
    if (split && final_step == NULL) {
        return TABULA_ERR_ARG;
    }
    if (final_step != NULL && (final_step[0] < -1 || final_step[0] > 62 || final_step[1] < 0 || final_step[2] < 2
                               || final_step[2] > 62)) {
        return TABULA_ERR_ARG;
    }
    if (n_terms == 1 && zoom[0] == 0 && (centre == NULL || centre[0] == 0) && final_step == NULL) {
        /* one table: TABLE, RESCALE x 2^-7 */
        const int16_t *table = hi[0];
        for (n = 0; n < count; ++n) {
            /* |interp| < 2^23: + 2^23 keeps the shifted value non-negative, 2^23 / 2^7 = 2^16 */
            const int32_t y = ((tabula_table16_interp(table, input[n], &bad) + 64 + (INT32_C(1) << 23)) >> 7) - (INT32_C(1) << 16);
            if (bad) {
                return TABULA_ERR_ARG;
            }
            output[n] = (int16_t)(y < -32768 ? -32768 : (y > 32767 ? 32767 : y));
        }
        return TABULA_OK;
    }
    for (n = 0; n < count; ++n) {
        const int32_t x = input[n];
        int64_t acc = 0;
        for (t = 0; t < n_terms; ++t) {
            const int32_t c = centre != NULL ? centre[t] : 0;
            int32_t idx = x;
            int64_t part;
            if (zoom[t] != 0 || c != 0) {
                const int32_t v = (x - c) * (INT32_C(1) << zoom[t]); /* |x - c| <= 2^17, 2^zoom <= 2^7 */
                idx = v < -32768 ? -32768 : (v > 32767 ? 32767 : v);
            }
            part = tabula_table16_interp(hi[t], idx, &bad);
            if (final_step != NULL) {
                part *= 128;
                if (split && lo[t] != NULL) {
                    part += tabula_table16_interp(lo[t], idx, &bad);
                }
            }
            acc += part;
        }
        if (bad) {
            return TABULA_ERR_ARG;
        }
        if (final_step == NULL) {
            acc = tabula_asr64(acc + 64, 7);
        } else {
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
            acc = table16_scale(acc, final_step[1], final_step[2]);
        }
        output[n] = (int16_t)tabula_clamp64(acc, -32768, 32767);
    }
    return TABULA_OK;
}
