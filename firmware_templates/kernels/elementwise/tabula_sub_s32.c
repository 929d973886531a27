/*
 * SUB int32 (TOSA 1.0 SUB, equal shapes): out[i] = a[i] - b[i].
 * Python twin: tabula/reference/ops/sub.py.
 *
 * The IR forbids overflow (not checked); the sum is taken modulo 2^32 so an out-of-contract input
 * wraps instead of being undefined behaviour.  Argument contract: count >= 0 (TABULA_ERR_ARG otherwise).
 */
#include "tabula_internal.h"

tabula_status tabula_sub_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t *output)
{
    int32_t i;
    if (count < 0) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        output[i] = tabula_u32_to_s32((uint32_t)a[i] - (uint32_t)b[i]);
    }
    return TABULA_OK;
}
