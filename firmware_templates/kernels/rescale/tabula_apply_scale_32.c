/*
 * TOSA 1.0 apply_scale_32, single rounding.  Contract: manifest.toml (rescale).
 *
 * |value * multiplier| < 2^62 and the rounding term is at most 2^61, so the sum never overflows.
 * The flooring shift is written with ~ so it does not rely on the implementation-defined
 * right shift of negative numbers: for x < 0, floor(x / 2^s) = ~((~x) >> s).
 * The RESCALE and AVG_POOL2D kernels validate their arguments before calling.
 */
#include "tabula_kernels.h"

int64_t tabula_apply_scale_32(int32_t value, int32_t multiplier, int32_t shift)
{
    int64_t x;
    if (shift < 2 || shift > 62) {
        return 0;
    }
    x = (int64_t)value * (int64_t)multiplier + ((int64_t)1 << (shift - 1));
    return (x >= 0) ? (x >> shift) : ~((~x) >> shift);
}
