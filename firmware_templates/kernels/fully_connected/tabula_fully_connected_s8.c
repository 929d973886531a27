/*
 * FULLY_CONNECTED int8 x int8 -> int32.  Contract: manifest.toml (fully_connected); Python twin:
 * tabula/reference/ops/fully_connected.py.
 *
 * Accumulation is modulo 2^32 (unsigned, never undefined behaviour); it equals TOSA's int32
 * accumulator whenever the exact sum fits int32, which the IR contract requires.
 * With weight_zp == 0 the input zero point is hoisted: sum (x - zx) w = sum x w - zx sum w; on
 * Helium (MVE) that dot product is tabula_dot_s8_mve (same bits; -DTABULA_PORTABLE_ONLY=1 forces
 * the scalar loop).  With input_zp == 0 too (codegen folds -input_zp * sum w into the bias) the Helium
 * path is tabula_gemv_s8_mve: each input vector loaded once for 4 output channels, no weight sum, the
 * vectorized requantization (tabula_mve.h).
 * DSP (Cortex-M4, M7, M33; tabula_fully_connected_dsp.h), any weight_zp and input_zp: four rows per step, each input
 * word widened once (SXTAB16, x - input_zp) for four SMLAD pairs; same bits as the scalar loop.
 * requant != NULL: each accumulator is requantized in a register (tabula_store_acc32) and the int8
 * result written: no int32 tensor (codegen's fused FULLY_CONNECTED + RESCALE [+ CLAMP]).
 */
#include "tabula_fully_connected_dsp.h"
#include "tabula_gemm_s8_mve.h"

tabula_status tabula_fully_connected_s8(int32_t n, int32_t in_c, int32_t out_c,
                                        const int8_t *input, int32_t input_zp,
                                        const int8_t *weight, int32_t weight_zp,
                                        const int32_t *bias, const tabula_requant *requant, void *output)
{
    int32_t b, o, i, rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (n < 1 || in_c < 1 || out_c < 1 || input_zp < -128 || input_zp > 127
        || weight_zp < -128 || weight_zp > 127
        || (requant && !tabula_requant_ok(requant, out_c, -128, 127, -128, 127, INT64_C(1) << 31))) {
        return TABULA_ERR_ARG;
    }
    TABULA_REQUANT_READ(requant, rq_zp, rq_lo, rq_hi)
#if TABULA_HAVE_MVE
    if (weight_zp == 0 && input_zp == 0) { /* codegen's folded bias: a GEMV per row, 4 channels a pass */
        tabula_gemm_s8_mve(n, input, in_c, weight, out_c, bias, requant,
                           requant != 0 && tabula_requant_shifts_ge33(requant, out_c), output);
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP
    tabula_dsp_fully_connected_s8(n, in_c, out_c, input, input_zp, weight, weight_zp, bias, requant, output);
    return TABULA_OK;
#endif
    for (b = 0; b < n; ++b) {
        const int8_t *xp = input + b * in_c;
        for (o = 0; o < out_c; ++o) {
            const int8_t *wp = weight + o * in_c;
            uint32_t acc = bias ? (uint32_t)bias[o] : 0u;
            if (weight_zp == 0) {
                int32_t wsum = 0;
#if TABULA_HAVE_MVE
                acc += (uint32_t)tabula_dot_s8_mve(xp, wp, in_c, &wsum);
#else
                for (i = 0; i < in_c; ++i) {
                    acc += (uint32_t)((int32_t)xp[i] * (int32_t)wp[i]);
                    wsum += wp[i];
                }
#endif
                acc -= (uint32_t)input_zp * (uint32_t)wsum;
            } else {
                for (i = 0; i < in_c; ++i) {
                    acc += (uint32_t)(((int32_t)xp[i] - input_zp) * ((int32_t)wp[i] - weight_zp));
                }
            }
            tabula_store_acc32(output, b * out_c + o, tabula_u32_to_s32(acc), requant, o, rq_zp, rq_lo, rq_hi);
        }
    }
    return TABULA_OK;
}
