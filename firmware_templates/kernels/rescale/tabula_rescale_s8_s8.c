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
#include "tabula_internal.h"

tabula_status tabula_rescale_s8_s8(const int8_t *input, int32_t count, int32_t channels,
                                   int32_t input_zp, int32_t output_zp,
                                   const int32_t *multiplier, const int32_t *shift,
                                   int32_t per_channel, int8_t *output)
{
    int32_t i, c = 0;
    if (!tabula_rescale_args_ok(count, channels, input_zp, -128, 127, output_zp, -128, 127,
                                multiplier, shift, per_channel, INT64_C(1) << 31)) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        const int32_t p = per_channel ? c : 0;
        const int64_t v = tabula_apply_scale_32((int32_t)input[i] - input_zp, multiplier[p], shift[p]) + output_zp;
        output[i] = (int8_t)tabula_clamp64(v, -128, 127);
        if (++c == channels) {
            c = 0;
        }
    }
    return TABULA_OK;
}
