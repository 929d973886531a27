/*
 * One body for ADD / SUB / MUL int32 with TOSA 1.0 broadcasting (contract: manifest.toml,
 * elementwise).  The variant file elementwise/tabula_<op>_bcast_s32.c defines, then includes this file:
 *     TABULA_FN                the kernel's name
 *     TABULA_EXTRA_PARAMS      extra parameters after `rank` (with a leading comma), or nothing
 *     TABULA_EXTRA_OK          a condition on them (1 when there are none)
 *     TABULA_ELEM(x, y)        the int32 result for one pair of int32 operands
 *
 * a [a_shape], b [b_shape] and the output share one rank; along each axis a dimension is either the
 * output's or 1 (read again for every output index).  The output walks in row-major order: an
 * odometer over the axes before the last one, and one of four tight inner loops over the last axis
 * (both operands advance, or one of them is held).  Codegen merges axes with the same broadcast
 * pattern first, so the last axis is as long as it can be.
 */
#if !defined(TABULA_FN) || !defined(TABULA_EXTRA_PARAMS) || !defined(TABULA_EXTRA_OK) || !defined(TABULA_ELEM)
#error "define TABULA_FN, TABULA_EXTRA_PARAMS, TABULA_EXTRA_OK and TABULA_ELEM before including tabula_broadcast_impl.h"
#endif

#include "tabula_internal.h"

#define TABULA_BCAST_MAX_RANK 6

tabula_status TABULA_FN(const int32_t *a, const int32_t *a_shape, const int32_t *b, const int32_t *b_shape,
                        int32_t rank TABULA_EXTRA_PARAMS, int32_t *output)
{
    int32_t out_shape[TABULA_BCAST_MAX_RANK], sa[TABULA_BCAST_MAX_RANK], sb[TABULA_BCAST_MAX_RANK];
    int32_t idx[TABULA_BCAST_MAX_RANK];
    int32_t i, j, inner, outer, step_a, step_b, off_a = 0, off_b = 0, da = 1, db = 1;
    int64_t total = 1;
    if (rank < 1 || rank > TABULA_BCAST_MAX_RANK || !(TABULA_EXTRA_OK)) {
        return TABULA_ERR_ARG;
    }
    for (i = rank - 1; i >= 0; --i) {
        const int32_t na = a_shape[i], nb = b_shape[i];
        if (na < 0 || nb < 0 || (na != nb && na != 1 && nb != 1)) {
            return TABULA_ERR_ARG;
        }
        out_shape[i] = (na == 1) ? nb : na;
        sa[i] = (na == 1) ? 0 : da; /* stride 0: the axis is broadcast */
        sb[i] = (nb == 1) ? 0 : db;
        da *= na;
        db *= nb;
        total *= out_shape[i];
        idx[i] = 0;
    }
    if (total == 0) {
        return TABULA_OK;
    }
    if (total > INT32_MAX) {
        return TABULA_ERR_ARG;
    }
    inner = out_shape[rank - 1];
    outer = (int32_t)(total / inner);
    step_a = sa[rank - 1];
    step_b = sb[rank - 1];
    for (j = 0; j < outer; ++j) {
        const int32_t *pa = a + off_a;
        const int32_t *pb = b + off_b;
        int32_t *po = output + (int64_t)j * inner;
        int32_t k;
        if (step_a != 0 && step_b != 0) {
            for (k = 0; k < inner; ++k) {
                po[k] = TABULA_ELEM(pa[k], pb[k]);
            }
        } else if (step_a != 0) {
            const int32_t y = pb[0];
            for (k = 0; k < inner; ++k) {
                po[k] = TABULA_ELEM(pa[k], y);
            }
        } else if (step_b != 0) {
            const int32_t x = pa[0];
            for (k = 0; k < inner; ++k) {
                po[k] = TABULA_ELEM(x, pb[k]);
            }
        } else {
            const int32_t v = TABULA_ELEM(pa[0], pb[0]);
            for (k = 0; k < inner; ++k) {
                po[k] = v;
            }
        }
        /* the odometer over the axes before the last */
        for (i = rank - 2; i >= 0; --i) {
            off_a += sa[i];
            off_b += sb[i];
            if (++idx[i] < out_shape[i]) {
                break;
            }
            off_a -= sa[i] * out_shape[i];
            off_b -= sb[i] * out_shape[i];
            idx[i] = 0;
        }
    }
    return TABULA_OK;
}
