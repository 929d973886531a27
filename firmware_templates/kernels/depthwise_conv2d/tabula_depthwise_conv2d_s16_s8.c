/* DEPTHWISE_CONV2D int16 x int8 -> int48 -> RESCALE (apply_scale_16) -> int8: a precision boundary of
 * scheme=mixed with its requantization in the epilogue.  The body is tabula_depthwise_conv2d_impl.h, the
 * contract manifest.toml.  int16 is symmetric: no input zero point. */
#define TABULA_DW_T int16_t
#define TABULA_DW_ACC_T int64_t
#define TABULA_DW_UACC_T uint64_t
#define TABULA_DW_TO_ACC tabula_u64_to_s64
#define TABULA_DW_OUT_T int8_t
#define TABULA_DW_STORE(out, at, acc, rq, o, zp, lo, hi) TABULA_STORE_REQ48(out, at, acc, rq, o, zp, lo, hi, int8_t)
#define TABULA_DW_WIDE 1
#define TABULA_DW_CROSS 1
#include "tabula_depthwise_conv2d_impl.h"

tabula_status tabula_depthwise_conv2d_s16_s8(const tabula_window *win, int32_t multiplier, const int16_t *input,
                                             const int8_t *weight, int32_t weight_zp, const int64_t *bias,
                                             const tabula_requant *requant, int8_t *output)
{
    return tabula_dw_body(win, multiplier, input, 0, weight, weight_zp, bias, requant, output);
}
