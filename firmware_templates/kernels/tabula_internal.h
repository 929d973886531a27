/*
 * Private helpers shared by the kernel sources (static inline; not part of the public contract in
 * tabula_kernels.h, which python/tabula/kernels.py generates from manifest.toml).  Everything here is
 * portable C99 with no undefined or implementation-defined behaviour: signed results are rebuilt
 * from unsigned (modulo) arithmetic, and right shifts of negative numbers are written as ~((~x) >> s).
 */
#ifndef TABULA_INTERNAL_H
#define TABULA_INTERNAL_H

#include <stdint.h>

#include "tabula_kernels.h"

#define TABULA_INT48_MIN (-(INT64_C(1) << 47))
#define TABULA_INT48_MAX ((INT64_C(1) << 47) - 1)

/* The range of a signed integer type T (two's complement), as int64_t constants: what a typed body
 * (<family>/tabula_<op>_impl.h) clamps to, derived from the type it is instantiated with. */
#define TABULA_MAX(T) ((int64_t)((UINT64_C(1) << (8u * sizeof(T) - 1u)) - 1u))
#define TABULA_MIN(T) (-TABULA_MAX(T) - 1)

/* TOSA 1.0 zero points (signed types): only an int8 tensor may carry one, any int8 value; every
 * other type's is 0.  TABULA_ZP_MIN(T) <= zp <= TABULA_ZP_MAX(T) is the check. */
#define TABULA_HAS_ZP(T) (sizeof(T) == 1u)
#define TABULA_ZP_MIN(T) (TABULA_HAS_ZP(T) ? -128 : 0)
#define TABULA_ZP_MAX(T) (TABULA_HAS_ZP(T) ? 127 : 0)

/* The int32 whose two's complement bit pattern is u (no implementation-defined conversion). */
static inline int32_t tabula_u32_to_s32(uint32_t u)
{
    return (u <= 0x7FFFFFFFu) ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* The int8 / int16 whose two's complement bit pattern is u (LOGICAL_LEFT_SHIFT keeps the type's width). */
static inline int8_t tabula_u8_to_s8(uint8_t u)
{
    return (u <= 0x7Fu) ? (int8_t)u : (int8_t)(-(int32_t)(uint8_t)(~u) - 1);
}

static inline int16_t tabula_u16_to_s16(uint16_t u)
{
    return (u <= 0x7FFFu) ? (int16_t)u : (int16_t)(-(int32_t)(uint16_t)(~u) - 1);
}

/* The int64 whose two's complement bit pattern is u. */
static inline int64_t tabula_u64_to_s64(uint64_t u)
{
    return (u <= UINT64_C(0x7FFFFFFFFFFFFFFF)) ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* floor(x / 2^s) for 0 <= s <= 63: an arithmetic right shift that does not rely on the
 * implementation-defined >> of negative numbers. */
static inline int64_t tabula_asr64(int64_t x, int32_t s)
{
    return (x >= 0) ? (x >> s) : ~((~x) >> s);
}

/* Clamp a 64-bit value into [lo, hi]. */
static inline int64_t tabula_clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* TOSA 1.0 MUL of one int32 pair: p = a * b exact in int64 (|p| <= 2^62), then for shift > 0
 * (p + 2^(shift-1)) >> shift, flooring (half toward +infinity; the rounding term is at most 2^61, so
 * nothing overflows int64).  A result outside int32 wraps modulo 2^32 (out of contract). */
static inline int32_t tabula_mul_elem_s32(int32_t a, int32_t b, int32_t shift)
{
    int64_t p = (int64_t)a * (int64_t)b;
    if (shift > 0) {
        p = tabula_asr64(p + ((int64_t)1 << (shift - 1)), shift);
    }
    return tabula_u32_to_s32((uint32_t)(uint64_t)p);
}

/* Step idx[0..n) to the next element of an n-d array of the given shape, the last axis fastest (an
 * odometer: after the last element every index is 0 again), with the caller's loop variable i.  PAD,
 * TILE and SLICE walk their output so.  (A macro: as a function the three kernels compile differently.) */
#define TABULA_INDEX_NEXT(i, idx, shape, n)                                                                \
    for (i = (n) - 1; i >= 0; --i) {                                                                      \
        if (++(idx)[i] < (shape)[i]) {                                                                    \
            break;                                                                                        \
        }                                                                                                 \
        (idx)[i] = 0;                                                                                     \
    }

/* TABULA_INDEX_NEXT for a kernel whose walk is its work: after the last element the kernel returns
 * TABULA_OK, else i is the axis that advanced.  TRANSPOSE, SELECT and the broadcasting binary ops walk
 * their output so, each operand's offset then moved by its tabula_index_steps step[i]. */
#define TABULA_INDEX_NEXT_OR_RETURN(i, idx, shape, n)                                                      \
    TABULA_INDEX_NEXT(i, idx, shape, n)                                                                   \
    if ((i) < 0) {                                                                                        \
        return TABULA_OK;                                                                                 \
    }

/* What an operand's offset moves by at each step of TABULA_INDEX_NEXT over shape[0..n), for an operand
 * read with stride[i] along axis i (0: broadcast): step[i] when axis i advances and the axes after it
 * wrap to 0 (stride[i] less what those axes had moved).  step may be stride (the steps replace the
 * strides); every dimension is >= 1. */
static inline void tabula_index_steps(const int32_t *stride, const int32_t *shape, int32_t n, int32_t *step)
{
    int32_t i, back = 0;
    for (i = n - 1; i >= 0; --i) {
        const int32_t s = stride[i];
        step[i] = s - back;
        back += s * (shape[i] - 1);
    }
}

/* floor(x / 2^s) for 0 <= s <= 31 (tabula_asr64's 32-bit twin). */
static inline int32_t tabula_asr32(int32_t x, int32_t s)
{
    return (x >= 0) ? (x >> s) : ~((~x) >> s);
}

/*
 * Window check shared by CONV2D and DEPTHWISE_CONV2D: win != NULL; sizes, kernel, stride and dilation
 * >= 1; pad_top, pad_left >= 0.
 */
static inline int tabula_conv_window_ok(const tabula_window *win)
{
    return win != 0 && win->n >= 1 && win->h >= 1 && win->w >= 1 && win->c >= 1 && win->out_h >= 1
           && win->out_w >= 1 && win->kernel_h >= 1 && win->kernel_w >= 1 && win->stride_y >= 1
           && win->stride_x >= 1 && win->dilation_y >= 1 && win->dilation_x >= 1 && win->pad_top >= 0
           && win->pad_left >= 0;
}

/* The fields of a checked window in the caller's int32_t locals n, h, w, c (the input), oh, ow (the
 * output), kh, kw (the kernel), sy, sx (the stride), dy, dx (the dilation), pt, pl (the padding): the
 * portable loops of CONV2D and DEPTHWISE_CONV2D keep them in registers (read as win->..., each would be
 * loaded again after every output store, which may alias the window). */
#define TABULA_WINDOW_LOCALS(win)                                                                         \
    do {                                                                                                  \
        n = (win)->n; h = (win)->h; w = (win)->w; c = (win)->c;                                           \
        oh = (win)->out_h; ow = (win)->out_w; kh = (win)->kernel_h; kw = (win)->kernel_w;                 \
        sy = (win)->stride_y; sx = (win)->stride_x; dy = (win)->dilation_y; dx = (win)->dilation_x;       \
        pt = (win)->pad_top; pl = (win)->pad_left;                                                        \
    } while (0)

/* ---- ISA paths: the kernels' Helium (tabula_mve.h, fully_connected/tabula_gemm_s8_mve.h) and DSP
 * (tabula_dsp.h, <family>/tabula_<op>_dsp.h) paths, each beside its portable path in the one function.
 * -DTABULA_PORTABLE_ONLY=1 compiles neither; -DTABULA_NO_ASM=1 keeps them but replaces every inline
 * assembly loop by its C twin (same sums, compiler-scheduled), so both can be tested. ---- */
#if defined(__ARM_FEATURE_MVE) && !defined(TABULA_PORTABLE_ONLY)
#define TABULA_HAVE_MVE 1
#else
#define TABULA_HAVE_MVE 0
#endif

/* The DSP extension (SMLAD, SXTB16: Cortex-M4, M7, M33) on cores without MVE. */
#if defined(__ARM_FEATURE_DSP) && !TABULA_HAVE_MVE && !defined(TABULA_PORTABLE_ONLY)
#define TABULA_HAVE_DSP 1
#else
#define TABULA_HAVE_DSP 0
#endif

/* 1: the ISA paths use their hand-scheduled assembly loops; 0 (-DTABULA_NO_ASM=1): their C twins. */
#if defined(TABULA_NO_ASM)
#define TABULA_USE_ASM 0
#else
#define TABULA_USE_ASM 1
#endif

#endif /* TABULA_INTERNAL_H */
