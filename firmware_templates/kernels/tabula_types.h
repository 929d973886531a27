/*
 * The fixed C types of the kernel API: the status every kernel returns, the geometry of a 2-D window
 * op and the requantization an accumulator kernel fuses into its epilogue.  Included by
 * tabula_kernels.h (generated from manifest.toml by python/tabula/kernels.py, which also reads this
 * file for the ctypes mirrors and for the field order python/tabula/requant.py packs: keep one
 * declaration per line).
 */
#ifndef TABULA_TYPES_H
#define TABULA_TYPES_H

#include <stdint.h>

typedef enum {
    TABULA_OK = 0,
    TABULA_ERR_ARG = 1,           /* a size, stride, shift or zero point outside the kernel's contract */
} tabula_status;

/* Shape and geometry of a 2-D window op (CONV2D, MAX_POOL2D, AVG_POOL2D). */
typedef struct {
    int32_t n, h, w, c;           /* input  [N,H,W,C] */
    int32_t out_h, out_w;         /* output spatial size */
    int32_t kernel_h, kernel_w;
    int32_t stride_y, stride_x;
    int32_t dilation_y, dilation_x;
    int32_t pad_top, pad_left;    /* bottom/right padding is implied by out_h/out_w */
} tabula_window;

/* One output channel's scale (TOSA 1.0 RESCALE): multiplier * 2^-shift. */
typedef struct {
    int32_t multiplier;           /* [0, 2^31) for an int32 accumulator (apply_scale_32), [0, 2^15) for int48 */
    int32_t shift;                /* [2, 62] */
} tabula_channel_scale;

/*
 * The requantization a CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED kernel fuses into its epilogue
 * (codegen's RESCALE after the accumulator op, and a CLAMP after it): output channel o of an
 * accumulator acc becomes
 *     clamp(apply_scale(acc, channel[o].multiplier, channel[o].shift) + output_zp, out_min, out_max)
 * (apply_scale_32 for int32 accumulators, apply_scale_16 for int48: a single rounding, half toward
 * +infinity).  channel[] holds one entry per output channel.  Packed by tabula.requant.pack (codegen,
 * tests, benchmarks); C99 cannot initialise a flexible array member, so a constant one is declared
 * with TABULA_REQUANT_STORAGE.
 */
typedef struct {
    int32_t output_zp;
    int32_t out_min, out_max;     /* the output type's range, narrowed to a fused CLAMP's bounds */
    tabula_channel_scale channel[];
} tabula_requant;

/* A block is int32 words: the TABULA_REQUANT_HEAD fixed fields, then 2 per channel.  Storage of a
 * constant tabula_requant of n channels, initialised with its words in declaration order:
 *     static const TABULA_REQUANT_STORAGE(2) rq = {{zp, lo, hi, m0, s0, m1, s1}};  ... &rq.requant ... */
#define TABULA_REQUANT_HEAD 3
#define TABULA_REQUANT_WORDS(n) (TABULA_REQUANT_HEAD + 2 * (n))
#define TABULA_REQUANT_STORAGE(n) union { int32_t words[TABULA_REQUANT_WORDS(n)]; tabula_requant requant; }

#endif /* TABULA_TYPES_H */
