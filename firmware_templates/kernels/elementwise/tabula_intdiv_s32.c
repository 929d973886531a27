/*
 * INTDIV int32.  Contract: manifest.toml (elementwise); Python twin: tabula/reference/ops/intdiv.py.
 *
 * C99's / truncates toward zero, as TOSA 1.0 INTDIV does.  The two cases TOSA REQUIREs away -- a zero
 * divisor, and INT32_MIN / -1 (its quotient leaves int32) -- are undefined behaviour in C; the kernel
 * stops there with TABULA_ERR_ARG instead.
 */
#include "tabula_internal.h"

tabula_status tabula_intdiv_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t *output)
{
    int32_t i;
    if (count < 0) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        if (b[i] == 0 || (a[i] == INT32_MIN && b[i] == -1)) {
            return TABULA_ERR_ARG;
        }
        output[i] = a[i] / b[i];
    }
    return TABULA_OK;
}
