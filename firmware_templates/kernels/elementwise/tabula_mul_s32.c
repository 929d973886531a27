/*
 * MUL int32.  Contract: manifest.toml (elementwise); Python twin: tabula/reference/ops/mul.py.
 *
 * The element is tabula_mul_elem_s32 (tabula_internal.h, shared with tabula_mul_bcast_s32): |a * b|
 * <= 2^62 and the rounding term is at most 2^61, so nothing overflows int64; the flooring shift is
 * tabula_asr64 (no implementation-defined shift of a negative value).  An out-of-contract result
 * wraps modulo 2^32 instead of being undefined behaviour.
 */
#include "tabula_internal.h"

tabula_status tabula_mul_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t shift, int32_t *output)
{
    int32_t i;
    if (count < 0 || shift < 0 || shift > 62) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        output[i] = tabula_mul_elem_s32(a[i], b[i], shift);
    }
    return TABULA_OK;
}
