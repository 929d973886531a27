/*
 * One body for FULLY_CONNECTED tabula_fully_connected_s8 / _s16 (contract: manifest.toml,
 * fully_connected; Python twin: tabula/reference/ops/fully_connected.py).  The variant file
 * fully_connected/tabula_fully_connected_<t>.c defines, then includes this file:
 *     TABULA_FN        the kernel's name
 *     TABULA_FC_WIDE   0: int8 x int8 -> int32; 1: int16 x int8 -> int48 held in int64_t (a16w8)
 * Everything else follows from it: the input type, the accumulator, the requantization (apply_scale_32
 * to int8, apply_scale_16 to int16), the input zero point (int8 only: int16 activations are
 * symmetric) and the ISA paths.
 *
 * Accumulation is modulo 2^32 (2^64) (unsigned, never undefined behaviour); it equals TOSA's int32
 * (int48) accumulator whenever the exact sum fits it, which the IR contract requires (int16: each term
 * fits int32).  requant != NULL (codegen's fused FULLY_CONNECTED + RESCALE [+ CLAMP]): each
 * accumulator is requantized in a register (tabula_store_acc32 / TABULA_STORE_ACC48) and the int8
 * (int16) result written: no accumulator tensor.
 *
 * int8: with weight_zp == 0 the input zero point is hoisted: sum (x - zx) w = sum x w - zx sum w; on
 * Helium (MVE) that dot product is tabula_dot_s8_mve (same bits; -DTABULA_PORTABLE_ONLY=1 forces the
 * scalar loop).  With input_zp == 0 too (codegen folds -input_zp * sum w into the bias) the Helium
 * path is tabula_gemm_s8_mve: each input vector loaded once for 4 output channels, no weight sum, the
 * vectorized requantization (tabula_mve.h).  DSP (Cortex-M4, M7, M33; tabula_fully_connected_dsp.h),
 * any weight_zp and input_zp: four rows per step, each input word widened once (SXTAB16, x - input_zp)
 * for four SMLAD pairs; same bits as the scalar loop.
 *
 * int16: on Helium, with weight_zp == 0, per input row tabula_gemv_s16_mve (tabula_mve.h): two output
 * channels per input load (VMLALDAVA, 64-bit accumulators modulo 2^64: the same bits as the scalar
 * loop), requantized 4 channels per vector where they fit int32 and every shift is in [17, 46].  DSP, with weight_zp == 0 and in_c <=
 * TABULA_DSP_FC_MAX: each input row packed once into [x0, x2], [x1, x3] words, two weight rows per
 * SMLALD loop (64-bit accumulators, modulo 2^64: the same bits).
 */
#if !defined(TABULA_FN) || !defined(TABULA_FC_WIDE)
#error "define TABULA_FN and TABULA_FC_WIDE before including tabula_fully_connected_impl.h"
#endif

#include "tabula_fully_connected_dsp.h"

#if TABULA_FC_WIDE
#include "tabula_mve.h"
#define TABULA_FC_T int16_t
#define TABULA_FC_ACC_T int64_t
#define TABULA_FC_OUT_T int16_t
#define TABULA_FC_ZP_PARAM
#define TABULA_FC_ZP 0
#else
#include "tabula_gemm_s8_mve.h"
#define TABULA_FC_T int8_t
#define TABULA_FC_ACC_T int32_t
#define TABULA_FC_OUT_T int8_t
#define TABULA_FC_ZP_PARAM int32_t input_zp,
#define TABULA_FC_ZP input_zp
#endif

tabula_status TABULA_FN(int32_t n, int32_t in_c, int32_t out_c, const TABULA_FC_T *input, TABULA_FC_ZP_PARAM
                        const int8_t *weight, int32_t weight_zp, const TABULA_FC_ACC_T *bias,
                        const tabula_requant *requant, void *output)
{
    int32_t b, o, i, rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (n < 1 || in_c < 1 || out_c < 1 || TABULA_FC_ZP < TABULA_ZP_MIN(TABULA_FC_T)
        || TABULA_FC_ZP > TABULA_ZP_MAX(TABULA_FC_T) || weight_zp < -128 || weight_zp > 127
        || TABULA_REQUANT_INVALID(requant, out_c, TABULA_FC_OUT_T)) {
        return TABULA_ERR_ARG;
    }
    TABULA_REQUANT_READ(requant, rq_zp, rq_lo, rq_hi)
#if TABULA_HAVE_MVE && !TABULA_FC_WIDE
    if (weight_zp == 0 && input_zp == 0) { /* codegen's folded bias: a GEMV per row, 4 channels a pass */
        tabula_gemm_s8_mve(n, input, in_c, weight, out_c, bias, requant,
                           requant != 0 && tabula_requant_shifts_ge33(requant, out_c), output);
        return TABULA_OK;
    }
#elif TABULA_HAVE_MVE
    if (weight_zp == 0) { /* int16: per row, 2 output channels per input load, the vector int48 epilogue */
        const int vec = requant != 0 && tabula_requant_s16_vec_ok(requant, out_c);
        for (b = 0; b < n; ++b) {
            tabula_gemv_s16_mve(input + b * in_c, in_c, weight, out_c, bias, requant, vec,
                                requant ? (void *)((int16_t *)output + b * out_c) : (void *)((int64_t *)output + b * out_c));
        }
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP && !TABULA_FC_WIDE
    tabula_dsp_fully_connected_s8(n, in_c, out_c, input, input_zp, weight, weight_zp, bias, requant, output);
    return TABULA_OK;
#elif TABULA_HAVE_DSP
    if (weight_zp == 0 && in_c <= TABULA_DSP_FC_MAX) {
        tabula_dsp_fully_connected_s16(n, in_c, out_c, input, weight, bias, requant, output);
        return TABULA_OK;
    }
#endif
    for (b = 0; b < n; ++b) {
        const TABULA_FC_T *xp = input + b * in_c;
        for (o = 0; o < out_c; ++o) {
            const int8_t *wp = weight + o * in_c;
#if TABULA_FC_WIDE
            uint64_t acc = bias ? (uint64_t)bias[o] : 0u;
            for (i = 0; i < in_c; ++i) {
                acc += (uint64_t)(int64_t)((int32_t)xp[i] * ((int32_t)wp[i] - weight_zp));
            }
            TABULA_STORE_ACC48(output, b * out_c + o, tabula_u64_to_s64(acc), requant, o, rq_zp, rq_lo, rq_hi);
#else
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
#endif
        }
    }
    return TABULA_OK;
}
