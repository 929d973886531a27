/*
 * RESCALE int8 -> int8 (TOSA 1.0 RESCALE, scale32 = true, double_round = false).
 *     out = clamp(apply_scale_32(in - input_zp, m[c], s[c]) + output_zp, -128, 127)
 * Per-channel parameters are indexed by the last axis (c = i % channels).
 * Python twin: tabula/reference/ops/rescale.py.
 *
 * Argument contract (TABULA_ERR_ARG otherwise): count >= 0, channels >= 1, count % channels == 0,
 * input_zp and output_zp in [-128, 127], every used multiplier in [0, 2^31), every used shift
 * in [2, 62].
 */
#include "tabula_kernels.h"

tabula_status tabula_rescale_s8_s8(const int8_t *input, int32_t count, int32_t channels,
                                   int32_t input_zp, int32_t output_zp,
                                   const int32_t *multiplier, const int32_t *shift,
                                   int32_t per_channel, int8_t *output)
{
    int32_t i, c, nparams;
    if (count < 0 || channels < 1 || count % channels != 0 || input_zp < -128 || input_zp > 127
        || output_zp < -128 || output_zp > 127) {
        return TABULA_ERR_ARG;
    }
    nparams = per_channel ? channels : 1;
    for (c = 0; c < nparams; ++c) {
        if (multiplier[c] < 0 || shift[c] < 2 || shift[c] > 62) {
            return TABULA_ERR_ARG;
        }
    }
    c = 0;
    for (i = 0; i < count; ++i) {
        const int32_t p = per_channel ? c : 0;
        int64_t v = tabula_apply_scale_32((int32_t)input[i] - input_zp, multiplier[p], shift[p]) + output_zp;
        v = v < -128 ? -128 : (v > 127 ? 127 : v);
        output[i] = (int8_t)v;
        if (++c == channels) {
            c = 0;
        }
    }
    return TABULA_OK;
}
