/* DEPTHWISE_CONV2D int8 x int8 -> int32 -> RESCALE (apply_scale_32) -> int16: a precision boundary of
 * scheme=mixed with its requantization in the epilogue.  The body is tabula_depthwise_conv2d_impl.h, the
 * contract manifest.toml. */
#define TABULA_DW_T int8_t
#define TABULA_DW_ACC_T int32_t
#define TABULA_DW_UACC_T uint32_t
#define TABULA_DW_TO_ACC tabula_u32_to_s32
#define TABULA_DW_OUT_T int16_t
#define TABULA_DW_STORE(out, at, acc, rq, o, zp, lo, hi) TABULA_STORE_REQ32(out, at, acc, rq, o, zp, lo, hi, 0, int16_t)
#define TABULA_DW_WIDE 0
#define TABULA_DW_CROSS 1
#include "tabula_depthwise_conv2d_impl.h"

tabula_status tabula_depthwise_conv2d_s8_s16(const tabula_window *win, int32_t multiplier, const int8_t *input,
                                             int32_t input_zp, const int8_t *weight, int32_t weight_zp,
                                             const int32_t *bias, const tabula_requant *requant, int16_t *output)
{
    return tabula_dw_body(win, multiplier, input, input_zp, weight, weight_zp, bias, requant, output);
}
