/*
 * TILE: walks the output in order with an odometer; each element is copied from the input position
 * the output index wraps to.  Contract: manifest.toml (data); Python twin: tabula/reference/ops/tile.py.
 */
#include <string.h>

#include "tabula_internal.h"

tabula_status tabula_tile(const void *input, const int32_t *in_shape, const int32_t *multiples, int32_t rank,
                          int32_t elem_bytes, void *output)
{
    const uint8_t *src = (const uint8_t *)input;
    uint8_t *dst = (uint8_t *)output;
    int32_t out_shape[6], in_stride[6], idx[6];
    int32_t i, k, total = 1;
    if (rank < 1 || rank > 6 || elem_bytes < 1 || elem_bytes > 8) {
        return TABULA_ERR_ARG;
    }
    for (i = rank - 1; i >= 0; --i) {
        if (in_shape[i] < 0 || multiples[i] < 1) {
            return TABULA_ERR_ARG;
        }
        in_stride[i] = (i == rank - 1) ? 1 : in_stride[i + 1] * in_shape[i + 1];
    }
    for (i = 0; i < rank; ++i) {
        out_shape[i] = in_shape[i] * multiples[i];
        idx[i] = 0;
        total *= out_shape[i];
    }
    for (k = 0; k < total; ++k) {
        int32_t off = 0;
        for (i = 0; i < rank; ++i) {
            off += (idx[i] % in_shape[i]) * in_stride[i];
        }
        memcpy(dst + (size_t)k * (size_t)elem_bytes, src + (size_t)off * (size_t)elem_bytes, (size_t)elem_bytes);
        TABULA_INDEX_NEXT(i, idx, out_shape, rank)
    }
    return TABULA_OK;
}
