/*
 * SELECT (TOSA 1.0 SELECT) with broadcasting, any element size of 1, 2 or 4 bytes: out = cond ? a : b.
 * Contract: manifest.toml (elementwise); Python twin: tabula/reference/ops/select.py.
 *
 * cond is tabula's mask: int8, 0 (false) or not 0 (true).  The three operands and the output share one
 * rank; along each axis an operand's dimension is the output's or 1 (stride 0).  The output walks in
 * row-major order with one odometer; the element is copied as its own type.
 */
#include "tabula_internal.h"

#define TABULA_SELECT_MAX_RANK 6

tabula_status tabula_select(const int8_t *cond, const int32_t *c_shape, const void *a, const int32_t *a_shape,
                            const void *b, const int32_t *b_shape, int32_t rank, int32_t elem_bytes, void *output)
{
    int32_t out_shape[TABULA_SELECT_MAX_RANK], sc[TABULA_SELECT_MAX_RANK], sa[TABULA_SELECT_MAX_RANK];
    int32_t sb[TABULA_SELECT_MAX_RANK], idx[TABULA_SELECT_MAX_RANK];
    int32_t i, dc = 1, da = 1, db = 1, oc = 0, oa = 0, ob = 0;
    int64_t total = 1, e;
    if (rank < 1 || rank > TABULA_SELECT_MAX_RANK || (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)) {
        return TABULA_ERR_ARG;
    }
    for (i = rank - 1; i >= 0; --i) {
        const int32_t nc = c_shape[i], na = a_shape[i], nb = b_shape[i];
        int32_t n = nc;
        if (nc < 0 || na < 0 || nb < 0) {
            return TABULA_ERR_ARG;
        }
        if (n == 1) {
            n = na;
        }
        if (n == 1) {
            n = nb;
        }
        if ((nc != n && nc != 1) || (na != n && na != 1) || (nb != n && nb != 1)) {
            return TABULA_ERR_ARG;
        }
        out_shape[i] = n;
        sc[i] = (nc == 1) ? 0 : dc;
        sa[i] = (na == 1) ? 0 : da;
        sb[i] = (nb == 1) ? 0 : db;
        dc *= nc;
        da *= na;
        db *= nb;
        total *= n;
        idx[i] = 0;
    }
    if (total > INT32_MAX) {
        return TABULA_ERR_ARG;
    }
    for (e = 0; e < total; ++e) {
        const int take_a = cond[oc] != 0;
        if (elem_bytes == 1) {
            ((int8_t *)output)[e] = take_a ? ((const int8_t *)a)[oa] : ((const int8_t *)b)[ob];
        } else if (elem_bytes == 2) {
            ((int16_t *)output)[e] = take_a ? ((const int16_t *)a)[oa] : ((const int16_t *)b)[ob];
        } else {
            ((int32_t *)output)[e] = take_a ? ((const int32_t *)a)[oa] : ((const int32_t *)b)[ob];
        }
        for (i = rank - 1; i >= 0; --i) {
            oc += sc[i];
            oa += sa[i];
            ob += sb[i];
            if (++idx[i] < out_shape[i]) {
                break;
            }
            oc -= sc[i] * out_shape[i];
            oa -= sa[i] * out_shape[i];
            ob -= sb[i] * out_shape[i];
            idx[i] = 0;
        }
    }
    return TABULA_OK;
}
