/*
 * One body for the pooling kernels tabula_max_pool2d_<t> and tabula_avg_pool2d_<t> (contracts:
 * manifest.toml, pool): the window walk is shared, the reduction over one window is the op's.
 * The variant file pool/tabula_<op>_<t>.c defines, then includes this file:
 *     TABULA_FN        the kernel's name
 *     TABULA_T         the element type (int8_t, int16_t): the zero points and the range follow from it
 *     TABULA_POOL_AVG  1 for AVG_POOL2D, 0 for MAX_POOL2D
 *
 * Each output pixel's window is clipped to the input once: kernel rows [ky0, ky1) and columns
 * [kx0, kx1) are its real taps, padded taps lie outside them (tabula_pool_window_ok puts at least one
 * real tap in every window).
 *   MAX: the max over the real taps (padding never wins: it acts as the type's minimum).  int8 on
 *        Helium (TABULA_HAVE_MVE): 16 channels per VMAX.S8 over the window's real taps, the channel tail
 *        predicated (VCTP8) -- the same max, no scalar tail; -DTABULA_PORTABLE_ONLY=1 forces the
 *        portable loop.  Cost rule: the vector path loads 16 channels per tap where the portable
 *        loop does one, so it is taken for every int8 MAX_POOL2D (at c == 1 it still does one
 *        predicated load per tap, as the scalar loop does).
 *   AVG: acc = sum over the real taps of (x - input_zp), taken modulo 2^32 (unsigned, never undefined
 *        behaviour; it equals TOSA's int32 accumulator whenever the exact sum fits int32, which the IR
 *        requires: 2^23 int8 or 2^15 int16 taps always fit); count = the number of real taps;
 *        out = clamp(apply_scale_32(acc, reciprocal_scale(count)) + output_zp).  int8 on Helium (windows of
 *        at most 2^16 taps): 4 channels per int32 vector (VLDRB.S32, VADD per tap), then apply_scale_32 as
 *        tabula_requant4_s8_mve does it, VMULH then the rounding VRSHL -- exact for shifts >= 33, so a
 *        smaller shift s (windows of 1..4 real taps) takes acc << (33 - s) and shift 33, the same value
 *        (|acc| <= 2^10 there; |acc| < 2^24 everywhere: nothing overflows).
 */
#if !defined(TABULA_FN) || !defined(TABULA_T) || !defined(TABULA_POOL_AVG)
#error "define TABULA_FN, TABULA_T and TABULA_POOL_AVG before including tabula_pool2d_impl.h"
#endif

#include "tabula_internal.h"
#if TABULA_HAVE_MVE
#include <arm_mve.h>
#endif

/*
 * Argument check shared by the pooling kernels (TOSA 1.0 MAX_POOL2D / AVG_POOL2D): sizes, kernel,
 * stride >= 1; dilation == 1 (pooling has none); 0 <= pad_top < kernel_h, 0 <= pad_left < kernel_w;
 * the last window starts inside the input.  Together these put at least one real element in every
 * window.
 */
static inline int tabula_pool_window_ok(const tabula_window *win)
{
    if (win == 0) {
        return 0;
    }
    return !(win->n < 1 || win->h < 1 || win->w < 1 || win->c < 1 || win->out_h < 1 || win->out_w < 1
             || win->kernel_h < 1 || win->kernel_w < 1 || win->stride_y < 1 || win->stride_x < 1
             || win->dilation_y != 1 || win->dilation_x != 1
             || win->pad_top < 0 || win->pad_top >= win->kernel_h
             || win->pad_left < 0 || win->pad_left >= win->kernel_w
             || (win->out_h - 1) * win->stride_y - win->pad_top >= win->h
             || (win->out_w - 1) * win->stride_x - win->pad_left >= win->w);
}

/*
 * TOSA 1.0 reciprocal_scale(count) for count >= 1: k = ceil(log2(count)),
 * multiplier = ((2^30 + 1) << k) / count (in [2^30, 2^31)), shift = 30 + k.
 * Python twin: tabula.qmath.reciprocal_scale.
 */
static inline void tabula_reciprocal_scale(int32_t count, int32_t *multiplier, int32_t *shift)
{
    int32_t k = 0;
    while (k < 31 && ((int64_t)1 << k) < (int64_t)count) {
        ++k;
    }
    *multiplier = (int32_t)((((INT64_C(1) << 30) + 1) << k) / (int64_t)count);
    *shift = 30 + k;
}

/* The real taps [first, end) of a window starting at input index i0 with k taps (no dilation) along an
 * axis of the given size: the window clipped to the input. */
#define TABULA_POOL_FIRST_TAP(i0) ((i0) < 0 ? -(i0) : 0)
#define TABULA_POOL_END_TAP(i0, k, size) ((size) - (i0) < (k) ? (size) - (i0) : (k))

#if TABULA_POOL_AVG
/* AVG_POOL2D takes zero points (non-zero only for int8) and at most 2^30 taps per window (so
 * reciprocal_scale's multiplier stays below 2^31); MAX_POOL2D takes neither. */
#define TABULA_POOL_ZP_PARAMS int32_t input_zp, int32_t output_zp,
#define TABULA_POOL_ARGS_OK(win)                                                                           \
    ((int64_t)(win)->kernel_h * (win)->kernel_w <= (INT64_C(1) << 30)                                      \
     && input_zp >= TABULA_ZP_MIN(TABULA_T) && input_zp <= TABULA_ZP_MAX(TABULA_T)                         \
     && output_zp >= TABULA_ZP_MIN(TABULA_T) && output_zp <= TABULA_ZP_MAX(TABULA_T))
#else
#define TABULA_POOL_ZP_PARAMS
#define TABULA_POOL_ARGS_OK(win) 1
#endif

tabula_status TABULA_FN(const tabula_window *win, const TABULA_T *input, TABULA_POOL_ZP_PARAMS TABULA_T *output)
{
    int32_t b, oy, ox, ky, kx, i;
    int32_t n, h, w, c, oh, ow, kh, kw, sy, sx, pt, pl;
#if TABULA_POOL_AVG
    int32_t m = 0, s = 0, last_count = 0; /* reciprocal_scale of the last window's count (a 64-bit division) */
#endif
    if (!tabula_pool_window_ok(win) || !TABULA_POOL_ARGS_OK(win)) {
        return TABULA_ERR_ARG;
    }
    n = win->n; h = win->h; w = win->w; c = win->c;
    oh = win->out_h; ow = win->out_w; kh = win->kernel_h; kw = win->kernel_w;
    sy = win->stride_y; sx = win->stride_x; pt = win->pad_top; pl = win->pad_left;
    for (b = 0; b < n; ++b) {
        for (oy = 0; oy < oh; ++oy) {
            const int32_t iy0 = oy * sy - pt;
            const int32_t ky0 = TABULA_POOL_FIRST_TAP(iy0), ky1 = TABULA_POOL_END_TAP(iy0, kh, h);
            for (ox = 0; ox < ow; ++ox) {
                const int32_t ix0 = ox * sx - pl;
                const int32_t kx0 = TABULA_POOL_FIRST_TAP(ix0), kx1 = TABULA_POOL_END_TAP(ix0, kw, w);
                TABULA_T *out = output + ((b * oh + oy) * ow + ox) * c;
#if TABULA_POOL_AVG
                const int32_t count = (ky1 - ky0) * (kx1 - kx0);
                const int32_t base = ((b * h + iy0) * w + ix0) * c; /* may be < 0: an offset, never a pointer */
                if (count != last_count) {
                    tabula_reciprocal_scale(count, &m, &s);
                    last_count = count;
                }
#if TABULA_HAVE_MVE
                if (sizeof(TABULA_T) == 1 && kh * kw <= 65536) { /* int8: 4 channels per int32 vector */
                    const int32_t up = s < 33 ? 33 - s : 0;    /* acc << up, s + up: the same value, s + up >= 33 */
                    const int32x4_t mv = vdupq_n_s32(m), shl = vdupq_n_s32(up), shr = vdupq_n_s32(32 - (s + up));
                    const int32x4_t lo = vdupq_n_s32(INT8_MIN), hi = vdupq_n_s32(INT8_MAX);
                    /* the window's first real tap; rows w * c bytes apart, taps c */
                    const int8_t *first = (const int8_t *)input + ((b * h + iy0 + ky0) * w + ix0 + kx0) * c;
                    const int32_t rows = ky1 - ky0, taps = kx1 - kx0, row_step = w * c;
                    for (i = 0; i < c; i += 4) {
                        const mve_pred16_t p = vctp32q((uint32_t)(c - i));
                        int32x4_t a = vdupq_n_s32(0), v;
                        const int8_t *row = first + i;
                        for (ky = 0; ky < rows; ++ky, row += row_step) {
                            const int8_t *xp = row;
                            for (kx = 0; kx < taps; ++kx, xp += c) {
                                a = vaddq_s32(a, vldrbq_z_s32(xp, p));
                            }
                        }
                        a = vshlq_s32(vsubq_n_s32(a, count * input_zp), shl);
                        v = vrshlq_s32(vmulhq_s32(a, mv), shr);
                        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, output_zp), lo), hi);
                        vstrbq_p_s32((int8_t *)out + i, v, p);
                    }
                    continue;
                }
#endif
                for (i = 0; i < c; ++i) {
                    uint32_t acc = 0u;
                    int64_t v;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            const int32_t x = input[base + (ky * w + kx) * c + i];
                            acc += (uint32_t)x;
                        }
                    }
                    acc -= (uint32_t)count * (uint32_t)input_zp;
                    v = tabula_apply_scale_32(tabula_u32_to_s32(acc), m, s) + output_zp;
                    out[i] = (TABULA_T)tabula_clamp64(v, TABULA_MIN(TABULA_T), TABULA_MAX(TABULA_T));
                }
#else
#if TABULA_HAVE_MVE
                if (sizeof(TABULA_T) == 1) { /* int8: 16 channels per vector, the tail predicated */
                    for (i = 0; i < c; i += 16) {
                        const mve_pred16_t p = vctp8q((uint32_t)(c - i));
                        int8x16_t m = vdupq_n_s8(INT8_MIN);
                        for (ky = ky0; ky < ky1; ++ky) {
                            for (kx = kx0; kx < kx1; ++kx) {
                                const int8_t *xp = (const int8_t *)input + ((b * h + iy0 + ky) * w + ix0 + kx) * c + i;
                                m = vmaxq_s8(m, vldrbq_z_s8(xp, p));
                            }
                        }
                        vstrbq_p_s8((int8_t *)out + i, m, p);
                    }
                    continue;
                }
#endif
                for (i = 0; i < c; ++i) {
                    out[i] = (TABULA_T)TABULA_MIN(TABULA_T);
                }
                for (ky = ky0; ky < ky1; ++ky) {
                    for (kx = kx0; kx < kx1; ++kx) {
                        const TABULA_T *xp = input + ((b * h + iy0 + ky) * w + ix0 + kx) * c;
                        for (i = 0; i < c; ++i) {
                            out[i] = xp[i] > out[i] ? xp[i] : out[i];
                        }
                    }
                }
#endif
            }
        }
    }
    return TABULA_OK;
}
