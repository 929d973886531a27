/*
 * CLAMP int8 (TOSA 1.0 CLAMP): out[i] = min(max(in[i], min_val), max_val).
 * Python twin: tabula/reference/ops/clamp.py.
 *
 * Argument contract (TABULA_ERR_ARG otherwise): count >= 0, -128 <= min_val <= max_val <= 127.
 */
#include "tabula_internal.h"

tabula_status tabula_clamp_s8(const int8_t *input, int32_t count, int32_t min_val, int32_t max_val, int8_t *output)
{
    int32_t i;
    int8_t lo, hi;
    if (count < 0 || min_val < -128 || max_val > 127 || min_val > max_val) {
        return TABULA_ERR_ARG;
    }
    lo = (int8_t)min_val;
    hi = (int8_t)max_val;
    for (i = 0; i < count; ++i) {
        const int8_t x = input[i];
        output[i] = x < lo ? lo : (x > hi ? hi : x);
    }
    return TABULA_OK;
}
