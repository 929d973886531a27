/*
 * One body for every ARGMAX kernel tabula_argmax_<t> (contract: manifest.toml, reduce; Python twin:
 * tabula/reference/ops/argmax.py).  The variant file reduce/tabula_argmax_<t>.c defines, then includes
 * this file:
 *     TABULA_FN  the kernel's name
 *     TABULA_T   the element type (int8_t, int16_t)
 * The input is [outer][axis_len][inner]; out[o][i] is the smallest k whose in[o][k][i] is the largest
 * (TOSA 1.0 ARGMAX: the first index of the maximum), an int32.  The rows are walked in memory order,
 * the best value so far kept beside each output.
 */
#if !defined(TABULA_FN) || !defined(TABULA_T)
#error "define TABULA_FN and TABULA_T before including tabula_argmax_impl.h"
#endif

#include "tabula_internal.h"

tabula_status TABULA_FN(const TABULA_T *input, int32_t outer, int32_t axis_len, int32_t inner, int32_t *output)
{
    int32_t o, k, i;
    if (outer < 0 || axis_len < 1 || inner < 0) {
        return TABULA_ERR_ARG;
    }
    for (o = 0; o < outer; ++o) {
        const TABULA_T *src = input + o * axis_len * inner;
        int32_t *dst = output + o * inner;
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
    }
    return TABULA_OK;
}
