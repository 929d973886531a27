/*
 * CONCAT (TOSA 1.0 CONCAT) of n_inputs row-major tensors along one axis, any element type.
 * The output is `outer` blocks (outer = product of the dims before the axis); block o is
 * inputs[0][o] (inner_bytes[0] bytes), then inputs[1][o], ..., then inputs[n_inputs-1][o], where
 * inner_bytes[i] = bytes of input i from the axis on (its axis size times the trailing dims times
 * the element size).  Python twin: tabula/reference/ops/concat.py.
 *
 * Argument contract (TABULA_ERR_ARG otherwise, nothing written): n_inputs >= 1, outer >= 0,
 * every inner_bytes[i] >= 0.  Inputs may be empty (0 bytes; their pointer is then not read) and
 * must not overlap the output.
 */
#include <stddef.h>
#include <string.h>

#include "tabula_internal.h"

tabula_status tabula_concat(const void *const *inputs, const int32_t *inner_bytes, int32_t n_inputs,
                            int32_t outer, void *output)
{
    uint8_t *dst = (uint8_t *)output;
    int32_t i, o;
    if (n_inputs < 1 || outer < 0) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < n_inputs; ++i) {
        if (inner_bytes[i] < 0) {
            return TABULA_ERR_ARG;
        }
    }
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < n_inputs; ++i) {
            const size_t len = (size_t)inner_bytes[i];
            if (len > 0u) {
                memcpy(dst, (const uint8_t *)inputs[i] + (size_t)o * len, len);
                dst += len;
            }
        }
    }
    return TABULA_OK;
}
