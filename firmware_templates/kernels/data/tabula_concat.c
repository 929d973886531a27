/*
 * CONCAT, any element type: one memcpy per (outer block, input).  Contract: manifest.toml (data);
 * Python twin: tabula/reference/ops/concat.py.
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
