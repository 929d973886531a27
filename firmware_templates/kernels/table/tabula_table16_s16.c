/*
 * Int16 table op, fused: what the TOSA ops tabula lowers an int16 table op to compute together
 * (tabula/qmath.py Table16Plan; the IR keeps the TOSA ops, codegen calls this once instead, so the
 * int32 intermediates need no arena and the element loop runs once).
 * For each element, with interp(t, i) = t[j] * 128 + (t[j+1] - t[j]) * f, j = (i + 32768) >> 7,
 * f = (i + 32768) & 127 (TOSA 1.0 TABLE int16):
 *     idx_t = saturate16(in * 2^zoom[t])                      (RESCALE int16 -> int16, exact)
 *     H     = sum over terms of interp(hi[t], idx_t)           (TABLE, ADD; 16.7)
 *   no lo table:  out = saturate16(floor((H + 2^6) / 2^7))     (RESCALE x 2^-7)
 *   else:         acc = H * 2^7 + sum over terms with lo of interp(lo[t], idx_t)
 *                 out = saturate16(floor((acc + 2^13) / 2^14)) (RESCALE x 2^7, ADD, RESCALE x 2^-14)
 * Sums are 64-bit, so nothing wraps; for every plan tabula builds (checked on every code at build
 * time: H inside [-2^22, 2^22), sums inside int32) this equals the TOSA op sequence bit for bit.
 * Python twin: tabula.qmath.table16_apply.  lo may be NULL (no term split) or hold NULL entries.
 * TABULA_ERR_ARG: count < 0, n_terms outside [1, 4], a zoom outside [0, 7] or a NULL hi table
 * (nothing written); an element meeting two adjacent entries whose difference leaves int16 (TOSA's
 * REQUIRE; tabula never emits one) stops the loop there.
 */
#include <stddef.h>

#include "tabula_internal.h"

/* interp(t, index) as above; 0 when the slope leaves int16 (*bad is set). */
static int32_t interp16(const int16_t *table, int32_t index, int32_t *bad)
{
    const int32_t v = index + 32768; /* 0 .. 65535 */
    const int32_t i = v >> 7;
    const int32_t base = table[i];
    const int32_t slope = (int32_t)table[i + 1] - base;
    if (slope < -32768 || slope > 32767) {
        *bad = 1;
        return 0;
    }
    return base * 128 + slope * (v & 127);
}

tabula_status tabula_table16_s16(const int16_t *input, int32_t count, int32_t n_terms, const int32_t *zoom,
                                 const int16_t *const *hi, const int16_t *const *lo, int16_t *output)
{
    int32_t n, t, split = 0, bad = 0;
    if (count < 0 || n_terms < 1 || n_terms > 4) {
        return TABULA_ERR_ARG;
    }
    for (t = 0; t < n_terms; ++t) {
        if (zoom[t] < 0 || zoom[t] > 7 || hi[t] == NULL) {
            return TABULA_ERR_ARG;
        }
        split |= (lo != NULL && lo[t] != NULL);
    }
    if (n_terms == 1 && zoom[0] == 0 && !split) { /* one table: TABLE, RESCALE x 2^-7 */
        const int16_t *table = hi[0];
        for (n = 0; n < count; ++n) {
            /* |interp| < 2^23: + 2^23 keeps the shifted value non-negative, 2^23 / 2^7 = 2^16 */
            const int32_t y = ((interp16(table, input[n], &bad) + 64 + (INT32_C(1) << 23)) >> 7) - (INT32_C(1) << 16);
            if (bad) {
                return TABULA_ERR_ARG;
            }
            output[n] = (int16_t)(y < -32768 ? -32768 : (y > 32767 ? 32767 : y));
        }
        return TABULA_OK;
    }
    for (n = 0; n < count; ++n) {
        int64_t h = 0, acc;
        int32_t lsum = 0;
        for (t = 0; t < n_terms; ++t) {
            int32_t idx = input[n];
            if (zoom[t] != 0) {
                idx = idx * (INT32_C(1) << zoom[t]);
                idx = idx < -32768 ? -32768 : (idx > 32767 ? 32767 : idx);
            }
            h += interp16(hi[t], idx, &bad);
            if (split && lo[t] != NULL) {
                lsum += interp16(lo[t], idx, &bad);
            }
        }
        if (bad) {
            return TABULA_ERR_ARG;
        }
        acc = split ? tabula_asr64(h * 128 + lsum + (INT64_C(1) << 13), 14) : tabula_asr64(h + 64, 7);
        output[n] = (int16_t)tabula_clamp64(acc, -32768, 32767);
    }
    return TABULA_OK;
}
