/*
 * One body for every CLAMP kernel tabula_clamp_<t> (contract: manifest.toml, clamp).
 * The variant file clamp/tabula_clamp_<t>.c defines, then includes this file:
 *     TABULA_FN  the kernel's name
 *     TABULA_T   the element type (int8_t, int16_t); the bounds must lie in its range
 */
#if !defined(TABULA_FN) || !defined(TABULA_T)
#error "define TABULA_FN and TABULA_T before including tabula_clamp_impl.h"
#endif

#include "tabula_internal.h"

tabula_status TABULA_FN(const TABULA_T *input, int32_t count, int32_t min_val, int32_t max_val, TABULA_T *output)
{
    int32_t i;
    TABULA_T lo, hi;
    if (count < 0 || min_val < TABULA_MIN(TABULA_T) || max_val > TABULA_MAX(TABULA_T) || min_val > max_val) {
        return TABULA_ERR_ARG;
    }
    lo = (TABULA_T)min_val;
    hi = (TABULA_T)max_val;
    for (i = 0; i < count; ++i) {
        const TABULA_T x = input[i];
        output[i] = x < lo ? lo : (x > hi ? hi : x);
    }
    return TABULA_OK;
}
