/*
 * One body for ADD and SUB int32 of equal shapes (contract: manifest.toml, add_sub).
 * The variant file elementwise/tabula_<add|sub>_s32.c defines, then includes this file:
 *     TABULA_FN      the kernel's name
 *     TABULA_OP(a, b) the operation on two uint32_t (+ or -)
 * The IR forbids overflow (not checked): the result is taken modulo 2^32, so an out-of-contract input
 * wraps instead of being undefined behaviour.
 */
#if !defined(TABULA_FN) || !defined(TABULA_OP)
#error "define TABULA_FN and TABULA_OP before including tabula_add_sub_impl.h"
#endif

#include "tabula_internal.h"

tabula_status TABULA_FN(const int32_t *a, const int32_t *b, int32_t count, int32_t *output)
{
    int32_t i;
    if (count < 0) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        output[i] = tabula_u32_to_s32(TABULA_OP((uint32_t)a[i], (uint32_t)b[i]));
    }
    return TABULA_OK;
}
