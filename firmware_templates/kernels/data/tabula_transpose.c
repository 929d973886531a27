/*
 * TRANSPOSE: walks the output in order with an odometer (TABULA_INDEX_NEXT) over the permuted input
 * strides (the offset moved by tabula_index_steps).  Contract:
 * manifest.toml (data); Python twin: tabula/reference/ops/transpose.py.
 */
#include <string.h>

#include "tabula_internal.h"

tabula_status tabula_transpose(const void *input, const int32_t *in_shape, const int32_t *perms,
                               int32_t rank, int32_t elem_bytes, void *output)
{
    const uint8_t *src = (const uint8_t *)input;
    uint8_t *dst = (uint8_t *)output;
    int32_t in_stride[6], out_shape[6], stride[6], idx[6];
    int32_t i, k, total = 1, off = 0;
    uint32_t seen = 0;
    if (rank < 0 || rank > 6 || (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)) {
        return TABULA_ERR_ARG;
    }
    for (i = rank - 1; i >= 0; --i) {
        if (in_shape[i] < 0) {
            return TABULA_ERR_ARG;
        }
        in_stride[i] = (i == rank - 1) ? 1 : in_stride[i + 1] * in_shape[i + 1];
    }
    for (i = 0; i < rank; ++i) {
        const int32_t p = perms[i];
        if (p < 0 || p >= rank || (seen & (1u << p)) != 0u) {
            return TABULA_ERR_ARG;
        }
        seen |= 1u << p;
        out_shape[i] = in_shape[p];
        stride[i] = in_stride[p];
        idx[i] = 0;
        total *= out_shape[i];
    }
    if (total == 0) {
        return TABULA_OK;
    }
    tabula_index_steps(stride, out_shape, rank, stride);
    for (k = 0;; ++k) {
        switch (elem_bytes) {
        case 1:
            dst[k] = src[off];
            break;
        case 2:
            memcpy(dst + 2 * k, src + 2 * off, 2);
            break;
        default:
            memcpy(dst + 4 * k, src + 4 * off, 4);
            break;
        }
        TABULA_INDEX_NEXT_OR_RETURN(i, idx, out_shape, rank)
        off += stride[i];
    }
}
