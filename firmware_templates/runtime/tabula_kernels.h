/*
 * tabula integer kernels: one public header, one function per file
 * (firmware_templates/runtime/kernels/tabula_<op>_<dtype>.c).
 *
 * Semantics: TOSA 1.0 (see python/tabula/lower/ir.py for each op's contract). Every kernel has a
 * Python twin in python/tabula/reference/ops/ and tests compare both bit for bit.
 * Layouts: activations NHWC, CONV2D weights OHWI, FULLY_CONNECTED weights [Cout][Cin].
 * All sizes are element counts unless a name says bytes.
 */
#ifndef TABULA_KERNELS_H
#define TABULA_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TABULA_OK = 0,
    TABULA_ERR_ARG = 1,      /* a size, stride or shift outside the kernel's contract */
} tabula_status;

/* Shape and geometry of a 2-D window op (CONV2D, MAX_POOL2D). */
typedef struct {
    int32_t n, h, w, c;           /* input  [N,H,W,C] */
    int32_t out_h, out_w;         /* output spatial size */
    int32_t kernel_h, kernel_w;
    int32_t stride_y, stride_x;
    int32_t dilation_y, dilation_x;
    int32_t pad_top, pad_left;    /* bottom/right padding is implied by out_h/out_w */
} tabula_window;

/*
 * TOSA apply_scale_32 with single rounding: (value * multiplier + 2^(shift-1)) >> shift,
 * arithmetic shift in 64 bits. multiplier in [0, 2^31), shift in [2, 62].
 * Rounding: half toward +infinity. Returns the unclamped 64-bit result.
 */
int64_t tabula_apply_scale_32(int32_t value, int32_t multiplier, int32_t shift);

/*
 * CONV2D int8 x int8 -> int32 (TOSA 1.0 CONV2D).
 * input  int8  [N,H,W,Cin]; weight int8 [Cout,KH,KW,Cin]; bias int32 [Cout] (may be NULL)
 * output int32 [N,OH,OW,Cout];  acc = bias + sum (x - input_zp) * (w - weight_zp).
 * Padded input positions contribute nothing (padding acts as input_zp).
 */
tabula_status tabula_conv2d_s8(const tabula_window *win, int32_t out_c,
                               const int8_t *input, int32_t input_zp,
                               const int8_t *weight, int32_t weight_zp,
                               const int32_t *bias, int32_t *output);

/*
 * FULLY_CONNECTED int8 x int8 -> int32 (TOSA 0.80 FULLY_CONNECTED).
 * input int8 [N,Cin]; weight int8 [Cout,Cin]; bias int32 [Cout] (may be NULL); output int32 [N,Cout].
 */
tabula_status tabula_fully_connected_s8(int32_t n, int32_t in_c, int32_t out_c,
                                        const int8_t *input, int32_t input_zp,
                                        const int8_t *weight, int32_t weight_zp,
                                        const int32_t *bias, int32_t *output);

/*
 * RESCALE int32 -> int8 (TOSA 1.0 RESCALE, scale32, no double rounding).
 * input int32 [count/channels][channels]; multiplier/shift have `channels` entries when
 * per_channel != 0 (channel = last axis), else one entry.
 * out = clamp(apply_scale_32(in - input_zp, m, s) + output_zp, -128, 127).
 */
tabula_status tabula_rescale_s32_s8(const int32_t *input, int32_t count, int32_t channels,
                                    int32_t input_zp, int32_t output_zp,
                                    const int32_t *multiplier, const int32_t *shift,
                                    int32_t per_channel, int8_t *output);

/* RESCALE int8 -> int8, otherwise as tabula_rescale_s32_s8. */
tabula_status tabula_rescale_s8_s8(const int8_t *input, int32_t count, int32_t channels,
                                   int32_t input_zp, int32_t output_zp,
                                   const int32_t *multiplier, const int32_t *shift,
                                   int32_t per_channel, int8_t *output);

/* TABLE int8 (TOSA 1.0 TABLE): out[i] = table[in[i] + 128]; table has 256 entries. */
tabula_status tabula_table_s8(const int8_t *input, int32_t count, const int8_t *table, int8_t *output);

/*
 * MAX_POOL2D int8 (TOSA 1.0 MAX_POOL2D), input [N,H,W,C] -> output [N,OH,OW,C].
 * Padded positions never win (they act as -128 and at least one real element is in every window).
 */
tabula_status tabula_max_pool2d_s8(const tabula_window *win, const int8_t *input, int8_t *output);

/*
 * TRANSPOSE of a tensor of up to 6 dims with element size elem_bytes (1, 2 or 4).
 * in_shape has `rank` entries; output dim i = input dim perms[i].
 */
tabula_status tabula_transpose(const void *input, const int32_t *in_shape, const int32_t *perms,
                               int32_t rank, int32_t elem_bytes, void *output);

#ifdef __cplusplus
}
#endif

#endif /* TABULA_KERNELS_H */
