/*
 * One body for the int32 elementwise ops of equal shapes, ADD, SUB, MUL and INTDIV (contract:
 * manifest.toml, elementwise; the broadcasting twins: tabula_broadcast_impl.h, with the same element
 * macros).  The variant file elementwise/tabula_<op>_s32.c defines, then includes this file:
 *     TABULA_FN                the kernel's name
 *     TABULA_ELEM(x, y)        the int32 result for one pair of int32 operands
 *     TABULA_EXTRA_PARAMS      optional: extra parameters after `count` (with a leading comma), and
 *     TABULA_EXTRA_OK          a condition on them (MUL: its shift)
 *     TABULA_REFUSED(x, y)     optional: 1 for a pair TOSA REQUIREs away (INTDIV: a zero divisor,
 *                              INT32_MIN / -1, undefined behaviour in C); the kernel stops there with
 *                              TABULA_ERR_ARG, the elements before written
 * ADD / SUB take the result modulo 2^32 (the IR forbids overflow, not checked: an out-of-contract input
 * wraps instead of being undefined behaviour); MUL is tabula_mul_elem_s32 (tabula_internal.h); INTDIV is
 * C99's /, which truncates toward zero as TOSA 1.0 INTDIV does.
 */
#if !defined(TABULA_FN) || !defined(TABULA_ELEM)
#error "define TABULA_FN and TABULA_ELEM before including tabula_same_shape_impl.h"
#endif
#ifndef TABULA_EXTRA_PARAMS
#define TABULA_EXTRA_PARAMS
#define TABULA_EXTRA_OK 1
#endif

#include "tabula_internal.h"

tabula_status TABULA_FN(const int32_t *a, const int32_t *b, int32_t count TABULA_EXTRA_PARAMS, int32_t *output)
{
    int32_t i;
    if (count < 0 || !(TABULA_EXTRA_OK)) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
#ifdef TABULA_REFUSED
        if (TABULA_REFUSED(a[i], b[i])) {
            return TABULA_ERR_ARG;
        }
#endif
        output[i] = TABULA_ELEM(a[i], b[i]);
    }
    return TABULA_OK;
}
