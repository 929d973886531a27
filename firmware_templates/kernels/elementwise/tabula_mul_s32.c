/*
 * MUL int32.  Contract: manifest.toml (elementwise); Python twin: tabula/reference/ops/mul.py.
 *
 * |a * b| <= 2^62 and the rounding term is at most 2^61, so nothing overflows int64; the flooring
 * shift is tabula_asr64 (no implementation-defined shift of a negative value).  An out-of-contract
 * result wraps modulo 2^32 instead of being undefined behaviour.
 */
#include "tabula_internal.h"

tabula_status tabula_mul_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t shift, int32_t *output)
{
    int32_t i;
    if (count < 0 || shift < 0 || shift > 62) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        int64_t p = (int64_t)a[i] * (int64_t)b[i];
        if (shift > 0) {
            p = tabula_asr64(p + ((int64_t)1 << (shift - 1)), shift);
        }
        output[i] = tabula_u32_to_s32((uint32_t)(uint64_t)p);
    }
    return TABULA_OK;
}
