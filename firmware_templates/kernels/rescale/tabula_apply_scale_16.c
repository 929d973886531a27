/*
 * TOSA 1.0 apply_scale_16 (RESCALE with scale32 = false, used for int48 accumulators):
 *     (value * multiplier + 2^(shift-1)) >> shift
 * with an arithmetic (flooring) shift in 64 bits: a single rounding, half toward +infinity.
 * Python twin: tabula.qmath.apply_scale_16_round_half_up.
 *
 * value in int48 [-2^47, 2^47), multiplier in [0, 2^15), shift in [2, 62]: |value * multiplier| < 2^62
 * and the rounding term is at most 2^61, so the sum never overflows int64.
 * Out-of-contract arguments (any of the three outside its range) return 0; the kernels validate
 * before calling.
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
