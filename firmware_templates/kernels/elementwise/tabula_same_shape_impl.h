/*
 * One body for the int32 elementwise ops of equal shapes, ADD, SUB, MUL and INTDIV (contract:
 * manifest.toml, elementwise; the broadcasting twins: tabula_broadcast_impl.h, with the same element
 * macros).  The variant file elementwise/tabula_<op>_s32.c defines, then includes this file:
 *     TABULA_FN                the kernel's name
 *     TABULA_ELEM(x, y)        the int32 result for one pair of int32 operands
 *     TABULA_EXTRA_PARAMS, TABULA_EXTRA_OK, TABULA_REFUSED(x, y)  optional, as tabula_elem_macros.h
 *                              says (the extra parameters after `count`; INTDIV refuses the pairs TOSA
 *                              REQUIREs away, undefined behaviour in C)
 * ADD / SUB take the result modulo 2^32 (the IR forbids overflow, not checked: an out-of-contract input
 * wraps instead of being undefined behaviour); MUL is tabula_mul_elem_s32 (tabula_internal.h); INTDIV is
 * C99's /, which truncates toward zero as TOSA 1.0 INTDIV does.
 */
#include "tabula_elem_macros.h"
#include "tabula_internal.h"

tabula_status TABULA_FN(const int32_t *a, const int32_t *b, int32_t count TABULA_EXTRA_PARAMS, int32_t *output)
{
    int32_t i;
    if (count < 0 || !(TABULA_EXTRA_OK)) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        TABULA_STOP_IF_REFUSED(a[i], b[i])
        output[i] = TABULA_ELEM(a[i], b[i]);
    }
    return TABULA_OK;
}
