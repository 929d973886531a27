/*
 * Int16 table op, fused (codegen's TABLE16).  Contract: manifest.toml (table); Python twin:
 * tabula.qmath.table16_apply.
 *
 * What the TOSA ops tabula lowers an int16 table op to compute together (tabula/qmath.py
 * Table16Plan; the IR keeps the TOSA ops, codegen calls this once instead, so the int32
 * intermediates need no arena and the element loop runs once).  With interp = tabula_table16_interp
 * (TOSA 1.0 TABLE int16, tabula_internal.h), for each element:
 *     idx_t = saturate16(in * 2^zoom[t])                      (RESCALE int16 -> int16, exact)
 *     H     = sum over terms of interp(hi[t], idx_t)           (TABLE, ADD; 16.7)
 *   no lo table:  out = saturate16(floor((H + 2^6) / 2^7))     (RESCALE x 2^-7)
 *   else:         acc = H * 2^7 + sum over terms with lo of interp(lo[t], idx_t)
 *                 out = saturate16(floor((acc + 2^13) / 2^14)) (RESCALE x 2^7, ADD, RESCALE x 2^-14)
 * Sums are 64-bit, so nothing wraps; for every plan tabula builds (checked on every code at build
 * time: H inside [-2^22, 2^22), sums inside int32) this equals the TOSA op sequence bit for bit.
 */
#include <stddef.h>

#include "tabula_internal.h"

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
            const int32_t y = ((tabula_table16_interp(table, input[n], &bad) + 64 + (INT32_C(1) << 23)) >> 7) - (INT32_C(1) << 16);
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
            h += tabula_table16_interp(hi[t], idx, &bad);
            if (split && lo[t] != NULL) {
                lsum += tabula_table16_interp(lo[t], idx, &bad);
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
