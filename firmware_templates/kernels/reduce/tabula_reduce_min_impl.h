/*
 * One body for every REDUCE_MIN kernel tabula_reduce_min_<t> (contract: manifest.toml, reduce;
 * Python twin: tabula/reference/ops/reduce_min.py).  The variant file reduce/tabula_reduce_min_<t>.c
 * defines, then includes this file:
 *     TABULA_FN  the kernel's name
 *     TABULA_T   the element type (int8_t, int16_t, int32_t)
 * The input is [outer][axis_len][inner]; each output element starts at the first row's value and
 * keeps the smaller one, walking the rows in memory order (inner elements contiguous).
 */
#if !defined(TABULA_FN) || !defined(TABULA_T)
#error "define TABULA_FN and TABULA_T before including tabula_reduce_min_impl.h"
#endif

#include "tabula_internal.h"

tabula_status TABULA_FN(const TABULA_T *input, int32_t outer, int32_t axis_len, int32_t inner, TABULA_T *output)
{
    int32_t o, k, i;
    if (outer < 0 || axis_len < 1 || inner < 0) {
        return TABULA_ERR_ARG;
    }
    for (o = 0; o < outer; ++o) {
        const TABULA_T *src = input + o * axis_len * inner;
        TABULA_T *dst = output + o * inner;
        for (i = 0; i < inner; ++i) {
            dst[i] = src[i];
        }
        for (k = 1; k < axis_len; ++k) {
            const TABULA_T *row = src + k * inner;
            for (i = 0; i < inner; ++i) {
                if (row[i] < dst[i]) {
                    dst[i] = row[i];
                }
            }
        }
    }
    return TABULA_OK;
}
