/*
 * One body for the elementwise binary kernels with TOSA 1.0 broadcasting (contract: manifest.toml,
 * elementwise): ADD / SUB / MUL int32 (tabula_<op>_bcast_s32), MAXIMUM / MINIMUM int32, GREATER /
 * GREATER_EQUAL / EQUAL (int32 -> an int8 mask of 0 / 1), BITWISE_AND / OR / XOR and LOGICAL_LEFT_SHIFT
 * (int8 / int16 / int32).  The variant file elementwise/tabula_<op>_<t>.c defines, then includes this
 * file:
 *     TABULA_FN             the kernel's name
 *     TABULA_ELEM(x, y)     the result for one pair of operands
 *     TABULA_IN_T           optional: the operands' element type (int32_t when not defined)
 *     TABULA_OUT_T          optional: the output's element type (int32_t when not defined)
 *     TABULA_EXTRA_PARAMS, TABULA_EXTRA_OK, TABULA_REFUSED(x, y)  optional, as tabula_elem_macros.h
 *                           says (the extra parameters after `rank`)
 *     TABULA_SHIFT_BITS     instead of TABULA_ELEM and TABULA_REFUSED: LOGICAL_LEFT_SHIFT of that width
 *                           (8, 16, 32): the bits shifted in the type's width, a shift outside [0, width)
 *                           refused
 *
 * a [a_shape], b [b_shape] and the output share one rank; along each axis a dimension is either the
 * output's or 1 (read again for every output index).  The output walks in row-major order: an
 * odometer over the axes before the last one (tabula_broadcast.h), and one of four tight inner loops
 * over the last axis (both operands advance, or one of them is held).  Codegen merges axes with the same broadcast pattern first
 * (python/tabula/codegen/ops/_broadcast.py), so the last axis is as long as it can be.
 */
#if defined(TABULA_SHIFT_BITS)
#if TABULA_SHIFT_BITS == 8
#define TABULA_ELEM(x, y) tabula_u8_to_s8((uint8_t)((uint32_t)(uint8_t)(x) << (y)))
#elif TABULA_SHIFT_BITS == 16
#define TABULA_ELEM(x, y) tabula_u16_to_s16((uint16_t)((uint32_t)(uint16_t)(x) << (y)))
#elif TABULA_SHIFT_BITS == 32
#define TABULA_ELEM(x, y) tabula_u32_to_s32((uint32_t)((uint32_t)(x) << (y)))
#else
#error "TABULA_SHIFT_BITS is 8, 16 or 32"
#endif
#define TABULA_REFUSED(x, y) ((y) < 0 || (y) >= TABULA_SHIFT_BITS)
#endif
#include "tabula_elem_macros.h"
#ifndef TABULA_IN_T
#define TABULA_IN_T int32_t
#endif
#ifndef TABULA_OUT_T
#define TABULA_OUT_T int32_t
#endif

#include "tabula_broadcast.h"

tabula_status TABULA_FN(const TABULA_IN_T *a, const int32_t *a_shape, const TABULA_IN_T *b, const int32_t *b_shape,
                        int32_t rank TABULA_EXTRA_PARAMS, TABULA_OUT_T *output)
{
    const int32_t *const shapes[2] = {a_shape, b_shape};
    int32_t out_shape[TABULA_BCAST_MAX_RANK], sa[TABULA_BCAST_MAX_RANK], sb[TABULA_BCAST_MAX_RANK];
    int32_t idx[TABULA_BCAST_MAX_RANK];
    int32_t i, inner, step_a, step_b, off_a = 0, off_b = 0;
    int64_t total;
    TABULA_OUT_T *po = output;
    tabula_status st = tabula_broadcast_shape(rank, 2, shapes, out_shape, idx, &total);
    if (st != TABULA_OK || !(TABULA_EXTRA_OK)) {
        return TABULA_ERR_ARG;
    }
    if (total == 0) {
        return TABULA_OK;
    }
    tabula_broadcast_strides(a_shape, rank, sa);
    tabula_broadcast_strides(b_shape, rank, sb);
    inner = out_shape[rank - 1];
    step_a = sa[rank - 1];
    step_b = sb[rank - 1];
    tabula_index_steps(sa, out_shape, rank - 1, sa);
    tabula_index_steps(sb, out_shape, rank - 1, sb);
    for (;;) {
        const TABULA_IN_T *pa = a + off_a;
        const TABULA_IN_T *pb = b + off_b;
        int32_t k;
        if (step_a != 0 && step_b != 0) {
            for (k = 0; k < inner; ++k) {
                TABULA_STOP_IF_REFUSED(pa[k], pb[k])
                po[k] = (TABULA_OUT_T)(TABULA_ELEM(pa[k], pb[k]));
            }
        } else if (step_a != 0) {
            const TABULA_IN_T y = pb[0];
            for (k = 0; k < inner; ++k) {
                TABULA_STOP_IF_REFUSED(pa[k], y)
                po[k] = (TABULA_OUT_T)(TABULA_ELEM(pa[k], y));
            }
        } else if (step_b != 0) {
            const TABULA_IN_T x = pa[0];
            for (k = 0; k < inner; ++k) {
                TABULA_STOP_IF_REFUSED(x, pb[k])
                po[k] = (TABULA_OUT_T)(TABULA_ELEM(x, pb[k]));
            }
        } else {
            TABULA_OUT_T v;
            TABULA_STOP_IF_REFUSED(pa[0], pb[0])
            v = (TABULA_OUT_T)(TABULA_ELEM(pa[0], pb[0]));
            for (k = 0; k < inner; ++k) {
                po[k] = v;
            }
        }
        po += inner;
        /* the odometer over the axes before the last */
        TABULA_INDEX_NEXT_OR_RETURN(i, idx, out_shape, rank - 1)
        off_a += sa[i];
        off_b += sb[i];
    }
}
