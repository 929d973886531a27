/*
 * REDUCE_SUM int32.  Contract: manifest.toml (reduce); Python twin: tabula/reference/ops/reduce_sum.py.
 *
 * Each sum is taken in 64 bits (at most 2^31 terms of |v| <= 2^31: no overflow) and must fit int32, as
 * TOSA REQUIREs; one that does not stops the kernel with TABULA_ERR_ARG instead of wrapping.
 */
#include "tabula_internal.h"

tabula_status tabula_reduce_sum_s32(const int32_t *input, int32_t outer, int32_t axis_len, int32_t inner,
                                    int32_t *output)
{
    int32_t o, k, i;
    if (outer < 0 || axis_len < 1 || inner < 0) {
        return TABULA_ERR_ARG;
    }
    for (o = 0; o < outer; ++o) {
        const int32_t *src = input + o * axis_len * inner;
        for (i = 0; i < inner; ++i) {
            int64_t acc = 0;
            for (k = 0; k < axis_len; ++k) {
                acc += src[k * inner + i];
            }
            if (acc < INT32_MIN || acc > INT32_MAX) {
                return TABULA_ERR_ARG;
            }
            output[o * inner + i] = (int32_t)acc;
        }
    }
    return TABULA_OK;
}
