/*
 * One body for the fused softmax kernels tabula_softmax_<t> (contract: manifest.toml, softmax; Python
 * twin: tabula.qmath.softmax_apply).  The variant file softmax/tabula_softmax_<t>.c defines, then
 * includes this file:
 *     TABULA_FN  the kernel's name
 *     TABULA_T   the element type of input and output (int8_t, int16_t)
 *
 * What the TOSA ops tabula lowers a softmax to compute together (python/tabula/qmath/softmax.py; the
 * IR keeps the ops, codegen calls this once instead, so the int32 intermediates -- differences, exps,
 * sums, numerators -- need no arena).  Three passes over each row: its max; the sum of its exps; the
 * quotients.  The exps are looked up twice rather than stored.  Every product is taken in 64 bits;
 * every value that the op sequence holds in int32 is checked to fit (codegen's tables and scales are
 * proved to at build time, so these checks never fire on generated code).
 */
#if !defined(TABULA_FN) || !defined(TABULA_T)
#error "define TABULA_FN and TABULA_T before including tabula_softmax_impl.h"
#endif

#include <stddef.h>

#include "tabula_internal.h"

/* e(d) of the op sequence for a difference d = x - max <= 0: one level (exp_lo == NULL):
 * exp_hi[max(d, -256) + 256] (TABLE entry 0 for every d <= -256: the RESCALE to the int16 index
 * saturates); two levels: a = floor((d + K/2) / K) (RESCALE x 2^-k), b = d - K a, and the TOSA MUL
 * round-half-up(exp_hi[max(a, -256) + 256] * exp_lo[b + K/2] / 2^exp_shift). */
static inline int64_t tabula_softmax_exp(int32_t d, const int32_t *exp_hi, const int32_t *exp_lo, int32_t split_bits,
                                         int32_t exp_shift)
{
    int64_t a, b, p;
    if (exp_lo == NULL) {
        return exp_hi[(d < -256 ? -256 : d) + 256];
    }
    a = tabula_asr64((int64_t)d + ((INT64_C(1) << split_bits) >> 1), split_bits);
    b = (int64_t)d - a * (INT64_C(1) << split_bits);
    p = (int64_t)exp_hi[(a < -256 ? -256 : a) + 256] * (int64_t)exp_lo[b + ((INT64_C(1) << split_bits) >> 1)];
    return exp_shift > 0 ? tabula_asr64(p + (INT64_C(1) << (exp_shift - 1)), exp_shift) : p;
}

/* TOSA apply_scale_32 on a value already known to satisfy its REQUIRE: (v * m + 2^(s-1)) >> s. */
static inline int64_t tabula_softmax_scale(int64_t v, int32_t multiplier, int32_t shift)
{
    return tabula_asr64(v * multiplier + (INT64_C(1) << (shift - 1)), shift);
}

tabula_status TABULA_FN(const TABULA_T *input, int32_t outer, int32_t axis_len, int32_t inner, const int32_t *exp_hi,
                        const int32_t *exp_lo, int32_t split_bits, int32_t exp_shift, const int32_t *scales,
                        int32_t output_zp, TABULA_T *output)
{
    int32_t o, i, k;
    if (outer < 0 || axis_len < 1 || inner < 0 || exp_hi == NULL || split_bits < 0 || split_bits > 8
        || exp_shift < 0 || exp_shift > 62 || scales == NULL || scales[0] < 0 || scales[1] < 1 || scales[1] > 62
        || scales[2] < 0 || scales[3] < 2 || scales[3] > 62 || scales[4] < 0 || scales[5] < 2 || scales[5] > 62
        || output_zp < TABULA_ZP_MIN(TABULA_T) || output_zp > TABULA_ZP_MAX(TABULA_T)) {
        return TABULA_ERR_ARG;
    }
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const TABULA_T *x = input + o * axis_len * inner + i;
            TABULA_T *y = output + o * axis_len * inner + i;
            int32_t m = x[0];
            int64_t sum = 0, den, half;
            for (k = 1; k < axis_len; ++k) {
                if (x[k * inner] > m) {
                    m = x[k * inner];
                }
            }
            for (k = 0; k < axis_len; ++k) {
                sum += tabula_softmax_exp(x[k * inner] - m, exp_hi, exp_lo, split_bits, exp_shift);
            }
            if (sum > INT32_MAX || sum >= (INT64_C(1) << (scales[3] - 1)) || sum >= (INT64_C(1) << (scales[5] - 1))) {
                return TABULA_ERR_ARG;
            }
            den = tabula_softmax_scale(sum, scales[2], scales[3]);
            half = tabula_softmax_scale(sum, scales[4], scales[5]);
            if (den < 1) { /* and den, half < 2^30: the REQUIRE on sum above */
                return TABULA_ERR_ARG;
            }
            for (k = 0; k < axis_len; ++k) {
                const int64_t e = tabula_softmax_exp(x[k * inner] - m, exp_hi, exp_lo, split_bits, exp_shift);
                const int64_t num = tabula_asr64(e * scales[0] + (INT64_C(1) << (scales[1] - 1)), scales[1]) + half;
                if (num < 0 || num > INT32_MAX) {
                    return TABULA_ERR_ARG;
                }
                /* INTDIV in 32 bits (one SDIV): 0 <= num < 2^31, 1 <= den < 2^30 */
                y[k * inner] = (TABULA_T)tabula_clamp64((int64_t)((int32_t)num / (int32_t)den) + output_zp,
                                                        TABULA_MIN(TABULA_T), TABULA_MAX(TABULA_T));
            }
        }
    }
    return TABULA_OK;
}
