/*
 * SELECT (TOSA 1.0 SELECT) with broadcasting, any element size of 1, 2 or 4 bytes: out = cond ? a : b.
 * Contract: manifest.toml (elementwise); Python twin: tabula/reference/ops/select.py.
 *
 * cond is tabula's mask: int8, 0 (false) or not 0 (true).  The three operands and the output share one
 * rank; along each axis an operand's dimension is the output's or 1 (stride 0).  The output walks in
 * row-major order with one odometer (tabula_broadcast.h); the element is copied as its own type.
 */
#include "tabula_broadcast.h"

tabula_status tabula_select(const int8_t *cond, const int32_t *c_shape, const void *a, const int32_t *a_shape,
                            const void *b, const int32_t *b_shape, int32_t rank, int32_t elem_bytes, void *output)
{
    const int32_t *const shapes[3] = {c_shape, a_shape, b_shape};
    int32_t out_shape[TABULA_BCAST_MAX_RANK], sc[TABULA_BCAST_MAX_RANK], sa[TABULA_BCAST_MAX_RANK];
    int32_t sb[TABULA_BCAST_MAX_RANK], idx[TABULA_BCAST_MAX_RANK];
    int32_t i, oc = 0, oa = 0, ob = 0;
    int64_t total, e;
    tabula_status st = tabula_broadcast_shape(rank, 3, shapes, out_shape, idx, &total);
    if (st != TABULA_OK || (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)) {
        return TABULA_ERR_ARG;
    }
    if (total == 0) {
        return TABULA_OK;
    }
    tabula_broadcast_strides(c_shape, rank, sc);
    tabula_broadcast_strides(a_shape, rank, sa);
    tabula_broadcast_strides(b_shape, rank, sb);
    tabula_index_steps(sc, out_shape, rank, sc);
    tabula_index_steps(sa, out_shape, rank, sa);
    tabula_index_steps(sb, out_shape, rank, sb);
    for (e = 0;; ++e) {
        const int take_a = cond[oc] != 0;
        if (elem_bytes == 1) {
            ((int8_t *)output)[e] = take_a ? ((const int8_t *)a)[oa] : ((const int8_t *)b)[ob];
        } else if (elem_bytes == 2) {
            ((int16_t *)output)[e] = take_a ? ((const int16_t *)a)[oa] : ((const int16_t *)b)[ob];
        } else {
            ((int32_t *)output)[e] = take_a ? ((const int32_t *)a)[oa] : ((const int32_t *)b)[ob];
        }
        TABULA_INDEX_NEXT_OR_RETURN(i, idx, out_shape, rank)
        oc += sc[i];
        oa += sa[i];
        ob += sb[i];
    }
}
