/*
 * RESCALE int16 -> int16 (TOSA 1.0 RESCALE, scale32 = true, double_round = false).
 *     out = clamp(apply_scale_32(in - input_zp, m[c], s[c]) + output_zp, -32768, 32767)
 * Per-channel parameters are indexed by the last axis (c = i % channels).
 * Python twin: tabula/reference/ops/rescale.py.
 *
 * Argument contract (TABULA_ERR_ARG otherwise, nothing written): count >= 0, channels >= 1,
 * count % channels == 0, input_zp in [-32768, 32767], output_zp in [-32768, 32767],
 * every used multiplier in [0, 2^31), every used shift in [2, 62].
 */
#include "tabula_internal.h"

tabula_status tabula_rescale_s16_s16(const int16_t *input, int32_t count, int32_t channels,
                                     int32_t input_zp, int32_t output_zp,
                                     const int32_t *multiplier, const int32_t *shift,
                                     int32_t per_channel, int16_t *output)
{
    int32_t i, c = 0;
    if (!tabula_rescale_args_ok(count, channels, input_zp, -32768, 32767, output_zp, -32768, 32767,
                                multiplier, shift, per_channel, INT64_C(1) << 31)) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        const int32_t p = per_channel ? c : 0;
        const int64_t v = tabula_apply_scale_32((int32_t)input[i] - input_zp, multiplier[p], shift[p]) + output_zp;
        output[i] = (int16_t)tabula_clamp64(v, -32768, 32767);
        if (++c == channels) {
            c = 0;
        }
    }
    return TABULA_OK;
}
