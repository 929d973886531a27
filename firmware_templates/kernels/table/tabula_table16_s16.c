/*
 * Int16 table op, fused (codegen's TABLE16, plans of tables only).  Contract: manifest.toml (table);
 * Python twin: tabula.qmath.table16_apply.
 *
 * What the TOSA ops tabula lowers an int16 table op to compute together (tabula.qmath.Table16Plan;
 * the IR keeps the TOSA ops, codegen calls this once instead, so the int32 intermediates need no
 * arena, the shift tables no flash, and the element loop runs once).  With the term sums H (hi tables,
 * 16.7) and L (lo tables) of tabula_table16_impl.h, for each element:
 *   no lo table:  out = saturate16(floor((H + 2^6) / 2^7))                     (ADD, RESCALE x 2^-7)
 *   else:         out = saturate16(floor((H * 2^7 + L + 2^13) / 2^14))        (RESCALE x 2^7, ADD, RESCALE x 2^-14)
 * Sums are 64-bit where they leave int32, so nothing wraps; for every plan tabula builds (checked on
 * every code at build time: sums inside int32, TOSA's REQUIREs hold) this equals the TOSA op sequence
 * bit for bit.  Plans with ramps or a product step: tabula_table16_ramps_s16.
 */
#include "tabula_table16_impl.h"

tabula_status tabula_table16_s16(const int16_t *input, int32_t count, int32_t n_terms, const int32_t *zoom,
                                 const int32_t *centre, const int16_t *const *hi, const int16_t *const *lo,
                                 int16_t *output)
{
    int32_t n, t, split = 0, bad = 0;
    const int32_t *const cen = centre != NULL ? centre : tabula_table16_no_centre;
    if (count < 0 || n_terms < 1 || !tabula_table16_terms_ok(n_terms, zoom, centre, hi)) {
        return TABULA_ERR_ARG;
    }
    for (t = 0; t < n_terms; ++t) {
        split |= (lo != NULL && lo[t] != NULL);
    }
    if (n_terms == 1 && zoom[0] == 0 && (centre == NULL || centre[0] == 0) && !split) {
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
        int32_t h = 0, l = 0;
        int64_t acc;
        tabula_table16_terms(input[n], n_terms, zoom, cen, hi, split ? lo : NULL, &h, &l, &bad);
        if (bad) {
            return TABULA_ERR_ARG;
        }
        acc = split ? tabula_asr64((int64_t)h * 128 + l + (INT64_C(1) << 13), 14) : tabula_asr64((int64_t)h + 64, 7);
        output[n] = (int16_t)tabula_clamp64(acc, -32768, 32767);
    }
    return TABULA_OK;
}
