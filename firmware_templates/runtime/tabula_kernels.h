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


/* ---------------------------------------------------------------------------------------------
 * int16 activations (a16w8) and the elementwise / joining ops.  int16 activations are symmetric
 * (zero point 0); their accumulators are TOSA int48, held in int64_t.
 * ------------------------------------------------------------------------------------------- */

/*
 * TOSA apply_scale_16 (RESCALE with scale32 = false): (value * multiplier + 2^(shift-1)) >> shift
 * for a 48-bit value and multiplier in [0, 2^15), shift in [2, 62]; half toward +infinity.
 */
int64_t tabula_apply_scale_16(int64_t value, int32_t multiplier, int32_t shift);

/* CONV2D int16 x int8 -> int48 (int64_t): as tabula_conv2d_s8 with input_zp fixed at 0. */
tabula_status tabula_conv2d_s16(const tabula_window *win, int32_t out_c,
                                const int16_t *input,
                                const int8_t *weight, int32_t weight_zp,
                                const int64_t *bias, int64_t *output);

/* FULLY_CONNECTED int16 x int8 -> int48 (int64_t): as tabula_fully_connected_s8 with input_zp 0. */
tabula_status tabula_fully_connected_s16(int32_t n, int32_t in_c, int32_t out_c,
                                         const int16_t *input,
                                         const int8_t *weight, int32_t weight_zp,
                                         const int64_t *bias, int64_t *output);

/*
 * More RESCALE variants, same parameters and semantics as tabula_rescale_s32_s8:
 * out = clamp(apply_scale(in - input_zp, m, s) + output_zp) to the output type.
 * s64_s16 uses tabula_apply_scale_16 (multiplier < 2^15, TOSA scale32 = false); the others
 * tabula_apply_scale_32.  int32/int64 inputs require input_zp == 0 (else TABULA_ERR_ARG).
 */
tabula_status tabula_rescale_s64_s16(const int64_t *input, int32_t count, int32_t channels,
                                     int32_t input_zp, int32_t output_zp,
                                     const int32_t *multiplier, const int32_t *shift,
                                     int32_t per_channel, int16_t *output);
tabula_status tabula_rescale_s32_s16(const int32_t *input, int32_t count, int32_t channels,
                                     int32_t input_zp, int32_t output_zp,
                                     const int32_t *multiplier, const int32_t *shift,
                                     int32_t per_channel, int16_t *output);
tabula_status tabula_rescale_s16_s16(const int16_t *input, int32_t count, int32_t channels,
                                     int32_t input_zp, int32_t output_zp,
                                     const int32_t *multiplier, const int32_t *shift,
                                     int32_t per_channel, int16_t *output);
tabula_status tabula_rescale_s8_s32(const int8_t *input, int32_t count, int32_t channels,
                                    int32_t input_zp, int32_t output_zp,
                                    const int32_t *multiplier, const int32_t *shift,
                                    int32_t per_channel, int32_t *output);
tabula_status tabula_rescale_s16_s32(const int16_t *input, int32_t count, int32_t channels,
                                     int32_t input_zp, int32_t output_zp,
                                     const int32_t *multiplier, const int32_t *shift,
                                     int32_t per_channel, int32_t *output);
tabula_status tabula_rescale_s32_s32(const int32_t *input, int32_t count, int32_t channels,
                                     int32_t input_zp, int32_t output_zp,
                                     const int32_t *multiplier, const int32_t *shift,
                                     int32_t per_channel, int32_t *output);

/*
 * TABLE int16 (TOSA 1.0 TABLE, int16): table has 513 entries; for each element
 * i = (in + 32768) >> 7, f = (in + 32768) & 127,
 * out = (table[i] << 7) + (table[i+1] - table[i]) * f   (int32, 16.7 fixed point).
 */
tabula_status tabula_table_s16(const int16_t *input, int32_t count, const int16_t *table, int32_t *output);

/*
 * Int16 table op, fused (codegen's TABLE16): the TOSA sequence tabula lowers an int16 table op to
 * (tabula.qmath.Table16Plan), computed in one pass.  Terms t < n_terms (1..4): index
 * saturate16(in * 2^zoom[t]) (zoom 0..7) into hi[t] (and lo[t] when lo != NULL and lo[t] != NULL);
 * out = saturate16(round-half-up(sum interp(hi) / 2^7)), or with lo tables
 * saturate16(round-half-up((sum interp(hi) * 2^7 + sum interp(lo)) / 2^14)).
 */
tabula_status tabula_table16_s16(const int16_t *input, int32_t count, int32_t n_terms, const int32_t *zoom,
                                 const int16_t *const *hi, const int16_t *const *lo, int16_t *output);

/* MAX_POOL2D int16, as tabula_max_pool2d_s8 (padding acts as -32768 and never wins). */
tabula_status tabula_max_pool2d_s16(const tabula_window *win, const int16_t *input, int16_t *output);

/*
 * AVG_POOL2D (TOSA 1.0): acc = sum over the window's valid (non-padded) taps of (in - input_zp),
 * int32; count = number of valid taps; (m, s) = TOSA reciprocal_scale(count);
 * out = clamp(apply_scale_32(acc, m, s) + output_zp). int16 requires both zero points 0.
 * dilation in win must be 1.
 */
tabula_status tabula_avg_pool2d_s8(const tabula_window *win, const int8_t *input, int32_t input_zp,
                                   int32_t output_zp, int8_t *output);
tabula_status tabula_avg_pool2d_s16(const tabula_window *win, const int16_t *input, int32_t input_zp,
                                    int32_t output_zp, int16_t *output);

/* CLAMP (TOSA 1.0): out = min(max(in, min_val), max_val); min_val <= max_val in the type's range. */
tabula_status tabula_clamp_s8(const int8_t *input, int32_t count, int32_t min_val, int32_t max_val, int8_t *output);
tabula_status tabula_clamp_s16(const int16_t *input, int32_t count, int32_t min_val, int32_t max_val, int16_t *output);

/* ADD / SUB int32, same shape (count elements). Wrap-around is a contract violation (not checked). */
tabula_status tabula_add_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t *output);
tabula_status tabula_sub_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t *output);

/* MUL int32 (TOSA 1.0 MUL): product in 64 bits; if shift > 0 add 2^(shift-1) then >> shift
 * (arithmetic); the result must fit int32 (TABULA_ERR_ARG is not returned for overflow). */
tabula_status tabula_mul_s32(const int32_t *a, const int32_t *b, int32_t count, int32_t shift, int32_t *output);

/*
 * CONCAT (TOSA 1.0) of n_inputs tensors along one axis, any element type: the output is `outer`
 * blocks; block o is inputs[0][o] (inner_bytes[0] bytes), then inputs[1][o], ...
 * (outer = product of the dims before the axis; inner_bytes[i] = bytes of input i from the axis on).
 */
tabula_status tabula_concat(const void *const *inputs, const int32_t *inner_bytes, int32_t n_inputs,
                            int32_t outer, void *output);

/*
 * SLICE (TOSA 1.0) of a row-major tensor of rank 1..6, any element size: output dim i holds
 * input indices start[i] .. start[i] + size[i] - 1 (0 <= start[i], start[i] + size[i] <= in_shape[i]).
 */
tabula_status tabula_slice(const void *input, const int32_t *in_shape, const int32_t *start,
                           const int32_t *size, int32_t rank, int32_t elem_bytes, void *output);

/*
 * PAD (TOSA 1.0, constant) of a row-major tensor of rank 1..6, element size 1..8: output dim i has
 * pad_before[i] + in_shape[i] + pad_after[i] entries; positions outside the input hold *pad_value
 * (one element, e.g. the zero point's code).
 */
tabula_status tabula_pad(const void *input, const int32_t *in_shape, const int32_t *pad_before,
                         const int32_t *pad_after, int32_t rank, int32_t elem_bytes,
                         const void *pad_value, void *output);

/*
 * RESIZE nearest with integer upscaling of an NHWC tensor [n][h][w][c], element size 1..8
 * (PyTorch upsample_nearest2d): out[b][y][x][ch] = in[b][y / scale_y][x / scale_x][ch].
 */
tabula_status tabula_resize_nearest(const void *input, int32_t n, int32_t h, int32_t w, int32_t c,
                                    int32_t scale_y, int32_t scale_x, int32_t elem_bytes, void *output);

#ifdef __cplusplus
}
#endif

#endif /* TABULA_KERNELS_H */
