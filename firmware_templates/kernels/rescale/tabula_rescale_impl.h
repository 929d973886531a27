/*
 * One body for every RESCALE kernel tabula_rescale_<in>_<out> (contract: manifest.toml, rescale).
 * The variant file rescale/tabula_rescale_<in>_<out>.c defines, then includes this file:
 *     TABULA_FN     the kernel's name
 *     TABULA_T_IN   int8_t, int16_t, int32_t or int64_t (TOSA int48)
 *     TABULA_T_OUT  int8_t, int16_t or int32_t
 * Everything else follows from the two types: the zero points only an int8 side may carry, the
 * output range, and for an int48 input apply_scale_16 (multiplier < 2^15) instead of apply_scale_32.
 *
 * Per element: x = in - input_zp; v = apply_scale(x, m[c], s[c]) (c = i % channels when
 * per_channel, else 0); out = clamp(v + output_zp) to TABULA_T_OUT.  64-bit arithmetic throughout,
 * so nothing overflows for any value of the input type.
 */
#if !defined(TABULA_FN) || !defined(TABULA_T_IN) || !defined(TABULA_T_OUT)
#error "define TABULA_FN, TABULA_T_IN and TABULA_T_OUT before including tabula_rescale_impl.h"
#endif

#include "tabula_internal.h"

/*
 * Argument check shared by the RESCALE kernels: count >= 0, channels >= 1, count % channels == 0,
 * input_zp in [izp_lo, izp_hi], output_zp in [ozp_lo, ozp_hi], and every used multiplier in
 * [0, m_end) and shift in [2, 62] (`channels` entries when per_channel != 0, else one).
 */
static inline int tabula_rescale_args_ok(int32_t count, int32_t channels, int32_t input_zp, int32_t izp_lo,
                                         int32_t izp_hi, int32_t output_zp, int32_t ozp_lo, int32_t ozp_hi,
                                         const int32_t *multiplier, const int32_t *shift, int32_t per_channel,
                                         int64_t m_end)
{
    int32_t c, nparams;
    if (count < 0 || channels < 1 || count % channels != 0 || input_zp < izp_lo || input_zp > izp_hi
        || output_zp < ozp_lo || output_zp > ozp_hi) {
        return 0;
    }
    nparams = per_channel ? channels : 1;
    for (c = 0; c < nparams; ++c) {
        if (multiplier[c] < 0 || (int64_t)multiplier[c] >= m_end || shift[c] < 2 || shift[c] > 62) {
            return 0;
        }
    }
    return 1;
}

/* TOSA int48 input (held in int64_t): RESCALE with scale32 = false */
#define TABULA_IN_INT48 (sizeof(TABULA_T_IN) == sizeof(int64_t))

tabula_status TABULA_FN(const TABULA_T_IN *input, int32_t count, int32_t channels, int32_t input_zp,
                        int32_t output_zp, const int32_t *multiplier, const int32_t *shift, int32_t per_channel,
                        TABULA_T_OUT *output)
{
    /* A constant 0 unless the input is int8 (the check below holds other zero points at 0), so the
     * compiler drops the subtraction from the int32 / int48 kernels. */
    const int32_t izp = TABULA_HAS_ZP(TABULA_T_IN) ? input_zp : 0;
    int32_t i, c = 0;
    if (!tabula_rescale_args_ok(count, channels, input_zp, TABULA_ZP_MIN(TABULA_T_IN), TABULA_ZP_MAX(TABULA_T_IN),
                                output_zp, TABULA_ZP_MIN(TABULA_T_OUT), TABULA_ZP_MAX(TABULA_T_OUT), multiplier,
                                shift, per_channel, TABULA_IN_INT48 ? INT64_C(1) << 15 : INT64_C(1) << 31)) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        const int32_t p = per_channel ? c : 0;
        const int64_t x = (int64_t)input[i] - izp;
        int64_t v;
        if (TABULA_IN_INT48) {
            if (x < TABULA_INT48_MIN || x > TABULA_INT48_MAX) {
                return TABULA_ERR_ARG; /* the elements before it have been written */
            }
            v = tabula_apply_scale_16(x, multiplier[p], shift[p]);
        } else {
            v = tabula_apply_scale_32((int32_t)x, multiplier[p], shift[p]);
        }
        output[i] = (TABULA_T_OUT)tabula_clamp64(v + output_zp, TABULA_MIN(TABULA_T_OUT), TABULA_MAX(TABULA_T_OUT));
        if (++c == channels) {
            c = 0;
        }
    }
    return TABULA_OK;
}
