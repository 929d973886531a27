/*
 * FULLY_CONNECTED int16 x int8 -> int48 held in int64_t (a16w8).  Contract: manifest.toml
 * (fully_connected); Python twin: tabula/reference/ops/fully_connected.py.
 *
 * Each term fits int32; the sum is taken modulo 2^64 (unsigned, never undefined behaviour) and
 * equals TOSA's int48 accumulator whenever the exact sum fits 48 bits, which the IR requires.
 *
 * Helium (MVE, Cortex-M55): with weight_zp == 0 each output is one predicated VMLALDAVA dot product
 * (64-bit accumulator, modulo 2^64: the same bits as the scalar loop).  -DTABULA_PORTABLE_ONLY=1 forces
 * the scalar path.
 * DSP (Cortex-M4, M7, M33; tabula_fully_connected_dsp.h), with weight_zp == 0 and in_c <= TABULA_DSP_FC_MAX: each input
 * row packed once into [x0, x2], [x1, x3] words, two weight rows per SMLALD loop (64-bit accumulators,
 * modulo 2^64: the same bits).
 * requant != NULL: each accumulator is requantized in a register (tabula_store_acc48: apply_scale_16)
 * and the int16 result written: no int48 tensor (codegen's fused FULLY_CONNECTED + RESCALE [+ CLAMP]).
 */
#include "tabula_fully_connected_dsp.h"
#include "tabula_mve.h"

tabula_status tabula_fully_connected_s16(int32_t n, int32_t in_c, int32_t out_c,
                                         const int16_t *input,
                                         const int8_t *weight, int32_t weight_zp,
                                         const int64_t *bias, const tabula_requant *requant, void *output)
{
    int32_t b, o, i, rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (n < 1 || in_c < 1 || out_c < 1 || weight_zp < -128 || weight_zp > 127
        || (requant && !tabula_requant_ok(requant, out_c, 0, 0, -32768, 32767, INT64_C(1) << 15))) {
        return TABULA_ERR_ARG;
    }
    TABULA_REQUANT_READ(requant, rq_zp, rq_lo, rq_hi)
#if TABULA_HAVE_DSP
    if (weight_zp == 0 && in_c <= TABULA_DSP_FC_MAX) {
        tabula_dsp_fully_connected_s16(n, in_c, out_c, input, weight, bias, requant, output);
        return TABULA_OK;
    }
#endif
    for (b = 0; b < n; ++b) {
        const int16_t *xp = input + b * in_c;
        for (o = 0; o < out_c; ++o) {
            const int8_t *wp = weight + o * in_c;
            uint64_t acc = bias ? (uint64_t)bias[o] : 0u;
#if TABULA_HAVE_MVE
            if (weight_zp == 0) {
                acc += (uint64_t)tabula_dot_s16_s8_mve(xp, wp, in_c);
            } else
#endif
            {
                for (i = 0; i < in_c; ++i) {
                    acc += (uint64_t)(int64_t)((int32_t)xp[i] * ((int32_t)wp[i] - weight_zp));
                }
            }
            TABULA_STORE_ACC48(output, b * out_c + o, tabula_u64_to_s64(acc), requant, o, rq_zp, rq_lo, rq_hi);
        }
    }
    return TABULA_OK;
}
