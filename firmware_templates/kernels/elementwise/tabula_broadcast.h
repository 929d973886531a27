/*
 * The broadcast of the elementwise kernels with TOSA 1.0 broadcasting (tabula_broadcast_impl.h's binary
 * ops, SELECT): n operands of one rank, along each axis every operand's dimension the output's or 1
 * (read again for every output index: stride 0).  The output is walked in row-major order with
 * TABULA_INDEX_NEXT, each operand's offset moved by its tabula_index_steps.
 */
#ifndef TABULA_BROADCAST_H
#define TABULA_BROADCAST_H

#include "tabula_internal.h"

#define TABULA_BCAST_MAX_RANK 6

/* The output's shape out_shape[0..rank) of the n operands shape[0..n) broadcast together, idx[0..rank)
 * zeroed (the walk's start) and the output's element count in *total.  TABULA_ERR_ARG when the rank is
 * outside [1, TABULA_BCAST_MAX_RANK], a dimension is negative, the shapes do not broadcast or the
 * count passes INT32_MAX (an empty output is TABULA_OK with *total 0). */
static inline tabula_status tabula_broadcast_shape(int32_t rank, int32_t n, const int32_t *const *shape,
                                                   int32_t *out_shape, int32_t *idx, int64_t *total)
{
    int32_t i, t;
    int64_t count = 1;
    if (rank < 1 || rank > TABULA_BCAST_MAX_RANK) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < rank; ++i) {
        int32_t dim = 1;
        for (t = 0; t < n; ++t) {
            const int32_t d = shape[t][i];
            if (d < 0 || (d != 1 && dim != 1 && d != dim)) {
                return TABULA_ERR_ARG;
            }
            dim = (d == 1) ? dim : d;
        }
        out_shape[i] = dim;
        idx[i] = 0;
        count *= dim;
    }
    *total = count;
    return (count > INT32_MAX) ? TABULA_ERR_ARG : TABULA_OK;
}

/* stride[0..rank): the row-major strides of an operand of that shape, 0 along a broadcast axis
 * (dimension 1).  After tabula_broadcast_shape with a count in [1, INT32_MAX]: no product overflows. */
static inline void tabula_broadcast_strides(const int32_t *shape, int32_t rank, int32_t *stride)
{
    int32_t i, d = 1;
    for (i = rank - 1; i >= 0; --i) {
        stride[i] = (shape[i] == 1) ? 0 : d;
        d *= shape[i];
    }
}

#endif /* TABULA_BROADCAST_H */
