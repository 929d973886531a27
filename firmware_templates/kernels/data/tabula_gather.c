/*
 * GATHER (TOSA 1.0 GATHER), any element size: values [N][K] rows of row_bytes bytes (C elements each),
 * indices int32 [N][W]; out[n][w] = values[n][indices[n][w]], one memcpy of row_bytes per output row.
 * Every index is checked against [0, K) before anything is written.  Contract: manifest.toml (data);
 * Python twin: tabula/reference/ops/gather.py.
 */
#include <string.h>

#include "tabula_kernels.h"

tabula_status tabula_gather(const void *values, const int32_t *indices, int32_t n, int32_t k, int32_t w,
                            int32_t row_bytes, void *output)
{
    const uint8_t *src = (const uint8_t *)values;
    uint8_t *dst = (uint8_t *)output;
    int32_t b, j;
    if (n < 0 || k < 1 || w < 0 || row_bytes < 0) {
        return TABULA_ERR_ARG;
    }
    for (j = 0; j < n * w; ++j) {
        if (indices[j] < 0 || indices[j] >= k) {
            return TABULA_ERR_ARG;
        }
    }
    for (b = 0; b < n; ++b) {
        const uint8_t *batch = src + (size_t)b * (size_t)k * (size_t)row_bytes;
        const int32_t *idx = indices + (size_t)b * (size_t)w;
        for (j = 0; j < w; ++j) {
            memcpy(dst, batch + (size_t)idx[j] * (size_t)row_bytes, (size_t)row_bytes);
            dst += row_bytes;
        }
    }
    return TABULA_OK;
}
