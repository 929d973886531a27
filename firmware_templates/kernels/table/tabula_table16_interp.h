/* The TOSA 1.0 TABLE int16 lookup of one element, shared by tabula_table_s16 and the fused
 * tabula_table16_s16 / tabula_table16_ramps_s16 (table/). */
#ifndef TABULA_TABLE16_INTERP_H
#define TABULA_TABLE16_INTERP_H

#include "tabula_internal.h"

/*
 * TOSA 1.0 TABLE int16 (apply_lookup_s) of one element `in` through a 513-entry table (entry j for
 * input code -32768 + 128 j): with v = in + 32768, j = v >> 7, f = v & 127,
 *     table[j] * 128 + (table[j+1] - table[j]) * f        (int32, 16.7 fixed point)
 * TOSA REQUIREs the slope table[j+1] - table[j] to fit int16: outside it *bad is set and 0 returned
 * (tabula's table builders never emit one).  Inside it |result| < 2^23: no overflow, no rounding.
 * Used by tabula_table_s16 and tabula_table16_s16.
 */
static inline int32_t tabula_table16_interp(const int16_t *table, int32_t in, int32_t *bad)
{
    const int32_t v = in + 32768; /* 0 .. 65535: a plain shift and mask */
    const int32_t j = v >> 7;
    const int32_t base = table[j];
    const int32_t slope = (int32_t)table[j + 1] - base;
    if (slope < -32768 || slope > 32767) {
        *bad = 1;
        return 0;
    }
    return base * 128 + slope * (v & 127);
}

#endif /* TABULA_TABLE16_INTERP_H */
