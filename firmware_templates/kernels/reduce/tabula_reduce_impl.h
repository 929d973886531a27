/*
 * One body for the REDUCE kernels tabula_reduce_max_<t> and tabula_reduce_sum_s32 (contract:
 * manifest.toml, reduce; Python twins: tabula/reference/ops/reduce_max.py, reduce_sum.py): the
 * [outer][axis_len][inner] walk is shared, the reduction is the op's.  The variant file
 * reduce/tabula_reduce_<op>_<t>.c defines, then includes this file:
 *     TABULA_FN          the kernel's name
 *     TABULA_T           the element type (int8_t, int16_t, int32_t; REDUCE_SUM: int32_t)
 *     TABULA_REDUCE_SUM  1 for REDUCE_SUM, 0 for REDUCE_MAX
 *   MAX: each output element starts at the first row's value and keeps the larger one, walking the
 *        rows in memory order (inner elements contiguous).
 *   SUM: each sum is taken in 64 bits (at most 2^31 terms of |v| <= 2^31: no overflow) and must fit
 *        int32, as TOSA REQUIREs; one that does not stops the kernel with TABULA_ERR_ARG instead of
 *        wrapping.
 */
#if !defined(TABULA_FN) || !defined(TABULA_T) || !defined(TABULA_REDUCE_SUM)
#error "define TABULA_FN, TABULA_T and TABULA_REDUCE_SUM before including tabula_reduce_impl.h"
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
#if TABULA_REDUCE_SUM
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
#else
        TABULA_T *dst = output + o * inner;
        for (i = 0; i < inner; ++i) {
            dst[i] = src[i];
        }
        for (k = 1; k < axis_len; ++k) {
            const TABULA_T *row = src + k * inner;
            for (i = 0; i < inner; ++i) {
                if (row[i] > dst[i]) {
                    dst[i] = row[i];
                }
            }
        }
#endif
    }
    return TABULA_OK;
}
