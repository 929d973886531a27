/*
 * PAD (constant), any element size: every output element is copied from the input or from
 * *pad_value, walking the output with an odometer.  Contract: manifest.toml (data); Python twin:
 * tabula/reference/ops/pad.py.
 */
#include <string.h>

#include "tabula_internal.h"

tabula_status tabula_pad(const void *input, const int32_t *in_shape, const int32_t *pad_before,
                         const int32_t *pad_after, int32_t rank, int32_t elem_bytes,
                         const void *pad_value, void *output)
{
    const uint8_t *src = (const uint8_t *)input;
    uint8_t *dst = (uint8_t *)output;
    int32_t out_shape[6], idx[6];
    int32_t i, total = 1, k;
    if (rank < 1 || rank > 6 || elem_bytes < 1 || elem_bytes > 8) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < rank; ++i) {
        if (in_shape[i] < 0 || pad_before[i] < 0 || pad_after[i] < 0) {
            return TABULA_ERR_ARG;
        }
        out_shape[i] = in_shape[i] + pad_before[i] + pad_after[i];
        idx[i] = 0;
        total *= out_shape[i];
    }
    for (k = 0; k < total; ++k) {
        int32_t off = 0, inside = 1;
        for (i = 0; i < rank; ++i) {
            const int32_t j = idx[i] - pad_before[i];
            if (j < 0 || j >= in_shape[i]) {
                inside = 0;
                break;
            }
            off = off * in_shape[i] + j;
        }
        memcpy(dst + (size_t)k * (size_t)elem_bytes,
               inside ? (const void *)(src + (size_t)off * (size_t)elem_bytes) : pad_value, (size_t)elem_bytes);
        TABULA_INDEX_NEXT(i, idx, out_shape, rank)
    }
    return TABULA_OK;
}
