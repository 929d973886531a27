/*
 * TOSA 1.0 apply_scale_16 (RESCALE with scale32 = false, for int48 values).  Contract:
 * manifest.toml (rescale).
 *
 * value in int48, multiplier in [0, 2^15), shift in [2, 62]: |value * multiplier| < 2^62 and the
 * rounding term is at most 2^61, so the sum never overflows int64.  The RESCALE kernels validate
 * their arguments before calling.
 */
#include "tabula_internal.h"

int64_t tabula_apply_scale_16(int64_t value, int32_t multiplier, int32_t shift)
{
    if (shift < 2 || shift > 62 || multiplier < 0 || multiplier > 32767
        || value < TABULA_INT48_MIN || value > TABULA_INT48_MAX) {
        return 0;
    }
    return tabula_asr64(value * (int64_t)multiplier + ((int64_t)1 << (shift - 1)), shift);
}
