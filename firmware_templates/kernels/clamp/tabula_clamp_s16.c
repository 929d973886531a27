/*
 * CLAMP int16 (TOSA 1.0 CLAMP): out[i] = min(max(in[i], min_val), max_val).
 * Python twin: tabula/reference/ops/clamp.py.
 *
 * Argument contract (TABULA_ERR_ARG otherwise): count >= 0, -32768 <= min_val <= max_val <= 32767.
 */
#include "tabula_internal.h"

tabula_status tabula_clamp_s16(const int16_t *input, int32_t count, int32_t min_val, int32_t max_val, int16_t *output)
{
    int32_t i;
    int16_t lo, hi;
    if (count < 0 || min_val < -32768 || max_val > 32767 || min_val > max_val) {
        return TABULA_ERR_ARG;
    }
    lo = (int16_t)min_val;
    hi = (int16_t)max_val;
    for (i = 0; i < count; ++i) {
        const int16_t x = input[i];
        output[i] = x < lo ? lo : (x > hi ? hi : x);
    }
    return TABULA_OK;
}
