/*
 * The term sum shared by the fused int16 table kernels (tabula_table16_s16, tabula_table16_ramps_s16;
 * contract: manifest.toml, table; Python twin: tabula.qmath.table16_apply).  For one element x and the
 * plan's terms t: idx_t = saturate16((x - centre[t]) * 2^zoom[t]) (the RESCALE, or shift TABLE +
 * RESCALE, of the IR: exact), *h += interp(hi[t], idx_t) and, when lo[t] != NULL, *l += interp(lo[t],
 * idx_t), with interp the TOSA 1.0 TABLE int16 lookup (tabula_table16_interp).  At most 8 terms of
 * |interp| < 2^23: both sums stay inside int32.
 */
#ifndef TABULA_TABLE16_IMPL_H
#define TABULA_TABLE16_IMPL_H

#include <stddef.h>

#include "tabula_table16_interp.h"

#define TABULA_TABLE16_MAX_TERMS 8

/* Arguments of the terms: n_terms in [0, 8], zoom in [0, 7], centre (NULL: all 0) a multiple of 128 in
 * [-65536, 65536], non-NULL hi tables. */
static inline int tabula_table16_terms_ok(int32_t n_terms, const int32_t *zoom, const int32_t *centre,
                                          const int16_t *const *hi)
{
    int32_t t;
    if (n_terms < 0 || n_terms > TABULA_TABLE16_MAX_TERMS || (n_terms > 0 && (zoom == NULL || hi == NULL))) {
        return 0;
    }
    for (t = 0; t < n_terms; ++t) {
        if (zoom[t] < 0 || zoom[t] > 7 || hi[t] == NULL
            || (centre != NULL && (centre[t] % 128 != 0 || centre[t] < -65536 || centre[t] > 65536))) {
            return 0;
        }
    }
    return 1;
}

/* The centres of a plan that passes centre == NULL. */
static const int32_t tabula_table16_no_centre[TABULA_TABLE16_MAX_TERMS] = { 0 };

/* centre: never NULL here (the kernels pass tabula_table16_no_centre for NULL). */
static inline void tabula_table16_terms(int32_t x, int32_t n_terms, const int32_t *zoom, const int32_t *centre,
                                        const int16_t *const *hi, const int16_t *const *lo, int32_t *h, int32_t *l,
                                        int32_t *bad)
{
    int32_t t;
    for (t = 0; t < n_terms; ++t) {
        int32_t idx = x;
        const int32_t c = centre[t];
        if ((zoom[t] | c) != 0) {
            const int32_t v = (x - c) * (INT32_C(1) << zoom[t]); /* |x - c| <= 2^17, 2^zoom <= 2^7 */
            idx = v < -32768 ? -32768 : (v > 32767 ? 32767 : v);
        }
        *h += tabula_table16_interp(hi[t], idx, bad);
        if (lo != NULL && lo[t] != NULL) {
            *l += tabula_table16_interp(lo[t], idx, bad);
        }
    }
}

#endif /* TABULA_TABLE16_IMPL_H */
