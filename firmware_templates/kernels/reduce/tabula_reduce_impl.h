/*
 * One body for the REDUCE kernels tabula_reduce_max_<t>, tabula_reduce_min_<t>, tabula_reduce_sum_s32
 * and the ARGMAX kernels tabula_argmax_<t> (contract: manifest.toml, reduce; Python twins:
 * tabula/reference/ops/reduce_max.py, reduce_min.py, reduce_sum.py, argmax.py): the
 * [outer][axis_len][inner] walk is shared, the reduction is the op's.  The variant file
 * reduce/tabula_<op>_<t>.c defines, then includes this file:
 *     TABULA_FN      the kernel's name
 *     TABULA_T       the element type (int8_t, int16_t, int32_t; REDUCE_SUM: int32_t)
 *     TABULA_REDUCE  the reduction: TABULA_REDUCE_MAX, TABULA_REDUCE_MIN, TABULA_REDUCE_SUM or
 *                    TABULA_REDUCE_ARGMAX (the output then int32_t, else TABULA_T)
 *   MAX / MIN: each output element starts at the first row's value and keeps the larger (smaller) one,
 *        walking the rows in memory order (inner elements contiguous).
 *   SUM: each sum is taken in 64 bits (at most 2^31 terms of |v| <= 2^31: no overflow) and must fit
 *        int32, as TOSA REQUIREs; one that does not stops the kernel with TABULA_ERR_ARG instead of
 *        wrapping.
 *   ARGMAX: out[o][i] is the smallest k whose in[o][k][i] is the largest (TOSA 1.0: the first index of
 *        the maximum); the output holds indices, not values, so each one walks its own axis, the best
 *        value so far in a local.
 */
#define TABULA_REDUCE_MAX 1
#define TABULA_REDUCE_MIN 2
#define TABULA_REDUCE_SUM 3
#define TABULA_REDUCE_ARGMAX 4
#if !defined(TABULA_FN) || !defined(TABULA_T) || !defined(TABULA_REDUCE)
#error "define TABULA_FN, TABULA_T and TABULA_REDUCE before including tabula_reduce_impl.h"
#endif
#if TABULA_REDUCE == TABULA_REDUCE_MAX
#define TABULA_KEEPS(v, best) ((v) > (best))
#elif TABULA_REDUCE == TABULA_REDUCE_MIN
#define TABULA_KEEPS(v, best) ((v) < (best))
#endif
#if TABULA_REDUCE == TABULA_REDUCE_ARGMAX
#define TABULA_OUT_T int32_t
#else
#define TABULA_OUT_T TABULA_T
#endif

#include "tabula_internal.h"

tabula_status TABULA_FN(const TABULA_T *input, int32_t outer, int32_t axis_len, int32_t inner, TABULA_OUT_T *output)
{
    int32_t o, k, i;
    if (outer < 0 || axis_len < 1 || inner < 0) {
        return TABULA_ERR_ARG;
    }
    for (o = 0; o < outer; ++o) {
        const TABULA_T *src = input + o * axis_len * inner;
        TABULA_OUT_T *dst = output + o * inner;
#if TABULA_REDUCE == TABULA_REDUCE_SUM
        for (i = 0; i < inner; ++i) {
            int64_t acc = 0;
            for (k = 0; k < axis_len; ++k) {
                acc += src[k * inner + i];
            }
            if (acc < INT32_MIN || acc > INT32_MAX) {
                return TABULA_ERR_ARG;
            }
            dst[i] = (int32_t)acc;
        }
#elif TABULA_REDUCE == TABULA_REDUCE_ARGMAX
        for (i = 0; i < inner; ++i) {
            TABULA_T best = src[i];
            int32_t at = 0;
            for (k = 1; k < axis_len; ++k) {
                const TABULA_T v = src[k * inner + i];
                if (v > best) {
                    best = v;
                    at = k;
                }
            }
            dst[i] = at;
        }
#else
        for (i = 0; i < inner; ++i) {
            dst[i] = src[i];
        }
        for (k = 1; k < axis_len; ++k) {
            const TABULA_T *row = src + k * inner;
            for (i = 0; i < inner; ++i) {
                if (TABULA_KEEPS(row[i], dst[i])) {
                    dst[i] = row[i];
                }
            }
        }
#endif
    }
    return TABULA_OK;
}
