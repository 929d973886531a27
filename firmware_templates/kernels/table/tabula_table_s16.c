/*
 * TABLE int16 (TOSA 1.0 TABLE, int16; apply_lookup_s): table has 513 int16 entries, entry i for
 * input code -32768 + 128*i.  For each element
 *   i = (in + 32768) >> 7,  f = (in + 32768) & 127,  slope = table[i+1] - table[i],
 *   out = table[i] * 128 + slope * f        (int32, 16.7 fixed point; no rounding, no overflow:
 *                                             |out| <= 32768*128 + 65535*127 < 2^31).
 * The follow-up RESCALE x 2^-7 brings it to int16.
 * Python twin: tabula/reference/ops/table.py.
 * TABULA_ERR_ARG when count < 0, or when an element meets a slope outside [-32768, 32767] (TOSA
 * REQUIREs it; tabula's table builder never emits one).  All arithmetic is defined C99 (no shift of
 * a negative value).
 */
#include "tabula_kernels.h"

tabula_status tabula_table_s16(const int16_t *input, int32_t count, const int16_t *table, int32_t *output)
{
    int32_t n;
    if (count < 0) {
        return TABULA_ERR_ARG;
    }
    for (n = 0; n < count; ++n) {
        const int32_t v = (int32_t)input[n] + 32768; /* 0 .. 65535 */
        const int32_t i = v >> 7;                    /* v >= 0: plain shift */
        const int32_t f = v & 127;
        const int32_t base = table[i];
        const int32_t slope = (int32_t)table[i + 1] - base;
        if (slope < -32768 || slope > 32767) {
            return TABULA_ERR_ARG;
        }
        output[n] = base * 128 + slope * f;
    }
    return TABULA_OK;
}
