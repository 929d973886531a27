/*
 * SLICE, any element size: one memcpy of size[rank-1] elements per output row, the rows walked with
 * an odometer over the leading dims.  Contract: manifest.toml (data); Python twin:
 * tabula/reference/ops/slice.py.
 */
#include <string.h>

#include "tabula_internal.h"

tabula_status tabula_slice(const void *input, const int32_t *in_shape, const int32_t *start,
                           const int32_t *size, int32_t rank, int32_t elem_bytes, void *output)
{
    const uint8_t *src = (const uint8_t *)input;
    uint8_t *dst = (uint8_t *)output;
    int32_t in_stride[6], idx[6];
    int32_t i, rows = 1, r;
    size_t row_bytes;
    if (rank < 1 || rank > 6 || elem_bytes < 1) {
        return TABULA_ERR_ARG;
    }
    for (i = rank - 1; i >= 0; --i) {
        if (start[i] < 0 || size[i] < 0 || in_shape[i] < 0 || start[i] > in_shape[i] - size[i]) {
            return TABULA_ERR_ARG;
        }
        in_stride[i] = (i == rank - 1) ? 1 : in_stride[i + 1] * in_shape[i + 1];
        idx[i] = 0;
        if (i < rank - 1) {
            rows *= size[i];
        }
    }
    row_bytes = (size_t)size[rank - 1] * (size_t)elem_bytes;
    if (row_bytes == 0u) {
        return TABULA_OK;
    }
    for (r = 0; r < rows; ++r) {
        int32_t off = start[rank - 1];
        for (i = 0; i < rank - 1; ++i) {
            off += (start[i] + idx[i]) * in_stride[i];
        }
        memcpy(dst, src + (size_t)off * (size_t)elem_bytes, row_bytes);
        dst += row_bytes;
        TABULA_INDEX_NEXT(i, idx, size, rank - 1)
    }
    return TABULA_OK;
}
