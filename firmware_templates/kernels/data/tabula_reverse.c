/*
 * REVERSE (TOSA 1.0 REVERSE), any element size: the input viewed as [outer][axis_len][inner_bytes]
 * (the bytes of the dims before, at and after the reversed axis); out[o][k] = in[o][axis_len - 1 - k],
 * one memcpy of inner_bytes per block.  Contract: manifest.toml (data); Python twin:
 * tabula/reference/ops/reverse.py.
 */
#include <string.h>

#include "tabula_kernels.h"

tabula_status tabula_reverse(const void *input, int32_t outer, int32_t axis_len, int32_t inner_bytes, void *output)
{
    const uint8_t *src = (const uint8_t *)input;
    uint8_t *dst = (uint8_t *)output;
    int32_t o, k;
    if (outer < 0 || axis_len < 1 || inner_bytes < 0) {
        return TABULA_ERR_ARG;
    }
    if (inner_bytes == 0) {
        return TABULA_OK;
    }
    for (o = 0; o < outer; ++o) {
        const uint8_t *block = src + (size_t)o * (size_t)axis_len * (size_t)inner_bytes;
        for (k = 0; k < axis_len; ++k) {
            memcpy(dst, block + (size_t)(axis_len - 1 - k) * (size_t)inner_bytes, (size_t)inner_bytes);
            dst += inner_bytes;
        }
    }
    return TABULA_OK;
}
