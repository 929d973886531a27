/*
 * One body for DEPTHWISE_CONV2D tabula_depthwise_conv2d_s8 / _s16 (contract: manifest.toml,
 * depthwise_conv2d; Python twin: tabula/reference/ops/depthwise_conv2d.py).
 * The variant file depthwise_conv2d/tabula_depthwise_conv2d_<t>.c defines, then includes this file:
 *     TABULA_DW_T       the input type (int8_t, int16_t): its zero-point range follows from it
 *     TABULA_DW_ACC_T   the accumulator type (int32_t; int64_t holding TOSA's int48)
 *     TABULA_DW_UACC_T  its unsigned twin (uint32_t, uint64_t): sums are taken modulo 2^32 / 2^64
 *     TABULA_DW_TO_ACC  the unsigned -> signed conversion (tabula_u32_to_s32, tabula_u64_to_s64)
 *     TABULA_DW_WIDE    0: the accumulator is 32 bits; 1: 64 bits (the Helium path sums the taps in
 *                       32-bit lanes and adds the bias in 64 bits)
 *     TABULA_DW_OUT_T   the requantized output type (int8_t, int16_t)
 *     TABULA_DW_REQUANT its requantization (tabula_requant32, tabula_requant48: tabula_internal.h)
 * and gets the static function tabula_dw_body(), which its public kernel calls.
 *
 * Layouts: input NHWC [N][H][W][C]; weight [KH][KW][C*M] (TOSA's [KH, KW, C, M]); bias and the
 * output's last axis [C*M], output channel o = c*M + m reads input channel c = o / M.  Each tap's
 * weights are contiguous in output-channel order, as the output is: channels go into vector lanes.
 *
 * Portable path: per output pixel, the kernel rows [ky0, ky1) and columns [kx0, kx1) whose taps lie
 * inside the input are found once (padded taps contribute (zp - zp) w = 0 and are skipped); per block
 * of TABULA_DW_BLOCK channels, accumulators on the stack start at the bias, every real tap adds
 * (x - input_zp)(w - weight_zp) to each, and the block is stored (tabula_dw_put).
 * Every product fits int32 (|x - zp| <= 255 for int8, |x| <= 32768 for int16, |w - weight_zp| <= 255);
 * sums are modulo 2^32 (s8) / 2^64 (s16), unsigned, never undefined behaviour, and equal TOSA's
 * accumulator whenever the exact sum fits it, which the IR contract requires.
 *
 * Helium (MVE, Cortex-M55), with weight_zp == 0, C < 65536 and KH*KW <= 256: eight output channels
 * per step in 16-bit lanes -- the input (x - input_zp for int8, fits int16; for M > 1 gathered at
 * channel o / M) and the weights are loaded widened to int16, VMULLB / VMULLT form the exact int32
 * products of the even / odd lanes and two int32x4 accumulators sum them over the pixel's real taps
 * (listed once per clipped window).  int8: the bias is added in the lanes and everything wraps modulo
 * 2^32 like the portable path; int16: each tap sum is exact in 32 bits (|x w| <= 2^22 per tap, at most
 * 256 taps: < 2^31) and is added to the 64-bit bias per channel.  Both paths give the same bits;
 * -DTABULA_PORTABLE_ONLY=1 forces the portable one.
 *
 * DSP (Cortex-M4, M7, M33: tabula_dsp.h), with weight_zp == 0, multiplier 1 and KH*KW <= 256: four
 * channels per step; int8: input and weight words widened by SXTAB16 / SXTB16 (x - input_zp, w);
 * int16: the input's natural pairs against the widened weights, tap sums exact in 32 bits, added to
 * the 64-bit bias; SMLAxy per channel over the pixel's real taps (listed once).  Same bits as the
 * portable path, which M > 1, larger kernels and a weight zero point keep.
 *
 * requant != NULL (codegen's fused DEPTHWISE_CONV2D + RESCALE [+ CLAMP]): on both paths each channel's
 * accumulator is requantized in a register (TABULA_DW_REQUANT) and the TABULA_DW_OUT_T result
 * written; no accumulator tensor.
 */
#if !defined(TABULA_DW_T) || !defined(TABULA_DW_ACC_T) || !defined(TABULA_DW_UACC_T) || !defined(TABULA_DW_TO_ACC) \
    || !defined(TABULA_DW_WIDE) || !defined(TABULA_DW_OUT_T) || !defined(TABULA_DW_REQUANT)
#error "define TABULA_DW_T, TABULA_DW_ACC_T, TABULA_DW_UACC_T, TABULA_DW_TO_ACC, TABULA_DW_WIDE, TABULA_DW_OUT_T and TABULA_DW_REQUANT first"
#endif

#include "tabula_internal.h"
#include "tabula_dsp.h"

/* Channels per block of the portable path's stack accumulators. */
#define TABULA_DW_BLOCK 32

/* The output's requantization: requant (NULL: write accumulators) and its zp, lo, hi read once. */
typedef struct {
    const int32_t *requant;
    int32_t zp, lo, hi;
    int32_t vec; /* Helium, int8: every shift >= 33, the vector requantization (tabula_requant4_s8_mve) */
} tabula_dw_rq;

/* Write accumulator a of output channel o at output element pix + o: the accumulator itself, or
 * requantized. */
static inline void tabula_dw_put(const tabula_dw_rq *rq, TABULA_DW_ACC_T a, int32_t o, void *output, int32_t pix)
{
    if (rq->requant) {
        ((TABULA_DW_OUT_T *)output)[pix + o] = (TABULA_DW_OUT_T)TABULA_DW_REQUANT(
            a, rq->requant[3 + 2 * o], rq->requant[4 + 2 * o], rq->zp, rq->lo, rq->hi);
    } else {
        ((TABULA_DW_ACC_T *)output)[pix + o] = a;
    }
}

/* The taps t in [*lo, *hi) of a k-tap window starting at i0 with dilation d that land inside
 * [0, size): 0 <= i0 + t d < size.  Empty (*lo == *hi) when none does. */
static inline void tabula_dw_taps(int32_t i0, int32_t k, int32_t d, int32_t size, int32_t *lo, int32_t *hi)
{
    const int32_t last = size - 1 - i0; /* t d <= last */
    int32_t a = i0 < 0 ? (-i0 + d - 1) / d : 0;
    int32_t b = last < 0 ? 0 : last / d + 1;
    if (b > k) {
        b = k;
    }
    if (a > b) {
        a = b;
    }
    *lo = a;
    *hi = b;
}

#if TABULA_HAVE_MVE
/* At most this many taps per window on the Helium path: the tap lists live on the stack (2 KiB), and
 * an int16 tap sum of 256 products |x w| <= 2^22 stays below 2^31. */
#define TABULA_DW_MVE_TAPS 256
#if TABULA_DW_WIDE
#define TABULA_DW_LOAD(p) vldrhq_s16(p)
#define TABULA_DW_LOAD_Z(p, pred) vldrhq_z_s16(p, pred)
#define TABULA_DW_GATHER_Z(p, offs, pred) vldrhq_gather_shifted_offset_z_s16(p, offs, pred)
#define TABULA_DW_MINUS_ZP(v, zp) (v)
#else
#define TABULA_DW_LOAD(p) vldrbq_s16(p)
#define TABULA_DW_LOAD_Z(p, pred) vldrbq_z_s16(p, pred)
#define TABULA_DW_GATHER_Z(p, offs, pred) vldrbq_gather_offset_z_s16(p, offs, pred)
#define TABULA_DW_MINUS_ZP(v, zp) vsubq_n_s16(v, (int16_t)(zp))
#endif

/* Channels [o0, o0 + n) (n <= 8) of one output pixel (output element pix): acc_e / acc_o are the even
 * / odd lanes' sums.  int8: write bias + sums; int16 (and any requantized output): bias + sums per
 * channel, in 64 bits for int16. */
static inline void tabula_dw_store_mve(const TABULA_DW_ACC_T *bias, int32_t o0, int32_t n, int32x4_t acc_e,
                                       int32x4_t acc_o, const tabula_dw_rq *rq, void *output, int32_t pix)
{
#if !TABULA_DW_WIDE
    if (rq->vec) { /* 8 channels requantized as two vectors, bit-exact with TABULA_DW_REQUANT */
        int32_t sums[8];
        int32x4x2_t pair;
        int32x4_t v0, v1;
        pair.val[0] = acc_e;
        pair.val[1] = acc_o;
        vst2q_s32(sums, pair); /* channel order */
        v0 = vldrwq_s32(sums);
        v1 = vldrwq_s32(sums + 4);
        if (bias) { /* modulo 2^32, as the portable path */
            v0 = vaddq_s32(v0, vldrwq_z_s32(bias + o0, vctp32q((uint32_t)(n < 4 ? n : 4))));
            v1 = vaddq_s32(v1, vldrwq_z_s32(bias + o0 + 4, vctp32q((uint32_t)(n > 4 ? n - 4 : 0))));
        }
        tabula_requant4_s8_mve(v0, rq->requant, o0, n < 4 ? n : 4, rq->zp, rq->lo, rq->hi, (int8_t *)output + pix + o0);
        if (n > 4) {
            tabula_requant4_s8_mve(v1, rq->requant, o0 + 4, n - 4, rq->zp, rq->lo, rq->hi,
                                   (int8_t *)output + pix + o0 + 4);
        }
        return;
    }
#endif
    if (TABULA_DW_WIDE || rq->requant) {
        int32_t sums[8], i;
        int32x4x2_t pair;
        pair.val[0] = acc_e;
        pair.val[1] = acc_o;
        vst2q_s32(sums, pair); /* interleaves back to channel order */
        for (i = 0; i < n; ++i) {
            tabula_dw_put(rq, TABULA_DW_TO_ACC((TABULA_DW_UACC_T)(bias ? bias[o0 + i] : 0)
                                               + (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)sums[i]), o0 + i, output, pix);
        }
        return;
    }
#if !TABULA_DW_WIDE
    {
        TABULA_DW_ACC_T *out = (TABULA_DW_ACC_T *)output + pix;
        const uint32x4_t even = vidupq_n_u32(0u, 2), odd = vidupq_n_u32(1u, 2);
        const mve_pred16_t pe = vctp32q((uint32_t)((n + 1) >> 1)), po = vctp32q((uint32_t)(n >> 1));
        if (bias) {
            acc_e = vaddq_s32(acc_e, vldrwq_gather_shifted_offset_z_s32(bias + o0, even, pe));
            acc_o = vaddq_s32(acc_o, vldrwq_gather_shifted_offset_z_s32(bias + o0, odd, po));
        }
        vstrwq_scatter_shifted_offset_p_s32(out + o0, even, acc_e, pe);
        vstrwq_scatter_shifted_offset_p_s32(out + o0, odd, acc_o, po);
    }
#endif
}

/* The Helium path of the whole kernel (see the file comment).  Per output pixel, the real taps are
 * listed once as offsets from the first real tap (pairs: input, weight offset; rebuilt only when the
 * clipped window changes, so interior pixels share one list); then each block of 8 output channels
 * is one flat loop over that list: full blocks (M == 1) with unpredicated loads, the rest (and every
 * channel when M > 1, the input gathered at channel o / M) predicated. */
static void tabula_dw_mve(const tabula_window *win, int32_t mult, const TABULA_DW_T *input, int32_t input_zp,
                          const int8_t *weight, const TABULA_DW_ACC_T *bias, const tabula_dw_rq *rq, void *output)
{
    const int32_t h = win->h, w = win->w, c = win->c, oc = c * mult, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t dy = win->dilation_y, dx = win->dilation_x;
    int32_t off[2 * TABULA_DW_MVE_TAPS]; /* per real tap: input offset, weight offset */
    int32_t nt = 0, cy0 = -1, cy1 = -1, cx0 = -1, cx1 = -1;
    int32_t b, oy, ox, o0, t;
#if TABULA_DW_WIDE
    (void)input_zp; /* int16 is symmetric */
#endif
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            int32_t ky0, ky1;
            tabula_dw_taps(iy0, kh, dy, h, &ky0, &ky1);
            for (ox = 0; ox < win->out_w; ++ox) {
                const int32_t ix0 = ox * win->stride_x - win->pad_left;
                const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * oc;
                const TABULA_DW_T *xb;
                const int8_t *wb;
                int32_t kx0, kx1;
                tabula_dw_taps(ix0, kw, dx, w, &kx0, &kx1);
                if (ky0 == ky1 || kx0 == kx1) { /* no real tap: every channel is its bias */
                    for (o0 = 0; o0 < oc; ++o0) {
                        tabula_dw_put(rq, bias ? bias[o0] : 0, o0, output, pix);
                    }
                    continue;
                }
                if (ky0 != cy0 || ky1 != cy1 || kx0 != cx0 || kx1 != cx1) {
                    int32_t ky, kx;
                    nt = 0;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx, ++nt) {
                            off[2 * nt] = ((ky - ky0) * dy * w + (kx - kx0) * dx) * c;
                            off[2 * nt + 1] = ((ky - ky0) * kw + (kx - kx0)) * oc;
                        }
                    }
                    cy0 = ky0; cy1 = ky1; cx0 = kx0; cx1 = kx1;
                }
                xb = input + ((b * h + iy0 + ky0 * dy) * w + ix0 + kx0 * dx) * c;
                wb = weight + (ky0 * kw + kx0) * oc;
                o0 = 0;
                if (mult == 1) {
                    for (; o0 + 8 <= oc; o0 += 8) {
                        const TABULA_DW_T *xbo = xb + o0;
                        const int8_t *wbo = wb + o0;
                        const int32_t *op = off;
                        int32x4_t acc_e = vdupq_n_s32(0), acc_o = vdupq_n_s32(0);
                        for (t = 0; t < nt; ++t, op += 2) {
                            const int16x8_t xv = TABULA_DW_MINUS_ZP(TABULA_DW_LOAD(xbo + op[0]), input_zp);
                            const int16x8_t wv = vldrbq_s16(wbo + op[1]);
                            acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                            acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                        }
                        tabula_dw_store_mve(bias, o0, 8, acc_e, acc_o, rq, output, pix);
                    }
                }
                for (; o0 < oc; o0 += 8) {
                    const int32_t rem = oc - o0 < 8 ? oc - o0 : 8;
                    const mve_pred16_t p = vctp16q((uint32_t)rem);
                    int32x4_t acc_e = vdupq_n_s32(0), acc_o = vdupq_n_s32(0);
                    if (mult == 1) {
                        for (t = 0; t < nt; ++t) {
                            const int16x8_t xv = TABULA_DW_MINUS_ZP(TABULA_DW_LOAD_Z(xb + o0 + off[2 * t], p), input_zp);
                            const int16x8_t wv = vldrbq_z_s16(wb + o0 + off[2 * t + 1], p);
                            acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                            acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                        }
                    } else { /* lane i reads input channel (o0 + i) / M */
                        uint16_t ch[8];
                        uint16x8_t offs;
                        int32_t i;
                        for (i = 0; i < 8; ++i) {
                            ch[i] = (uint16_t)((o0 + (i < rem ? i : 0)) / mult);
                        }
                        offs = vld1q_u16(ch);
                        for (t = 0; t < nt; ++t) {
                            const int16x8_t xv = TABULA_DW_MINUS_ZP(TABULA_DW_GATHER_Z(xb + off[2 * t], offs, p), input_zp);
                            const int16x8_t wv = vldrbq_z_s16(wb + o0 + off[2 * t + 1], p);
                            acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                            acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                        }
                    }
                    tabula_dw_store_mve(bias, o0, rem, acc_e, acc_o, rq, output, pix);
                }
            }
        }
    }
}
#endif

#if TABULA_HAVE_DSP
/* At most this many taps per window on the DSP path (the tap list lives on the stack, 2 KiB; an int16
 * tap sum of 256 products |x w| <= 2^22 stays below 2^31). */
#define TABULA_DW_DSP_TAPS 256

#if !TABULA_DW_WIDE
/* int8: channels o .. o + 3 of one pixel over its real taps (off: per tap the input and weight byte
 * offsets from xb, wb, at least one tap, ended by an input offset of -1): a[i] += (x - input_zp) w,
 * lanes [c0, c2] and [c1, c3] of the input word (SXTAB16, + kx2 = -input_zp) and of the weight word
 * (SXTB16), SMLABB / SMLATT per channel; 13 instructions per tap (4 MACs) with the loop, in 12
 * registers. */
static inline void tabula_dw_dsp_quad(const TABULA_DW_T *xb, const int8_t *wb, const int32_t *off, int32_t kx2,
                                      int32_t a[4])
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], ox, ow, u, v;
    __asm__ volatile(
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "1:\n\t"
        "ldr     %[u], [%[xb], %[ox]]\n\t"
        "ldr     %[v], [%[wb], %[ow]]\n\t"
        "sxtab16 %[ox], %[kx2], %[u]\n\t"
        "sxtab16 %[u], %[kx2], %[u], ror #8\n\t"
        "sxtb16  %[ow], %[v]\n\t"
        "sxtb16  %[v], %[v], ror #8\n\t"
        "smlabb  %[a0], %[ox], %[ow], %[a0]\n\t"
        "smlatt  %[a2], %[ox], %[ow], %[a2]\n\t"
        "smlabb  %[a1], %[u], %[v], %[a1]\n\t"
        "smlatt  %[a3], %[u], %[v], %[a3]\n\t"
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "cmp     %[ox], #0\n\t"
        "bge     1b"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [off] "+r"(off), [ox] "=&r"(ox),
          [ow] "=&r"(ow), [u] "=&r"(u), [v] "=&r"(v)
        : [xb] "r"(xb), [wb] "r"(wb), [kx2] "r"(kx2)
        : "memory", "cc");
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}
#else
/* int16: channels o .. o + 3 of one pixel over its real taps (off as for int8; input offsets in bytes):
 * a[i] += x w, the input's natural pairs [x0, x1], [x2, x3] against the weight lanes [w0, w2], [w1, w3]
 * (SXTB16) by SMLABB, SMLATB, SMLABT, SMLATT; each tap sum is exact in 32 bits (at most 256 products
 * |x w| <= 2^22).  13 instructions per tap (4 MACs) with the loop, in 12 registers. */
static inline void tabula_dw_dsp_quad(const TABULA_DW_T *xb, const int8_t *wb, const int32_t *off, int32_t kx2,
                                      int32_t a[4])
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], ox, ow, u, v, t;
    (void)kx2; /* int16 is symmetric */
    __asm__ volatile(
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "1:\n\t"
        "add     %[ox], %[xb], %[ox]\n\t"
        "ldr     %[u], [%[ox]]\n\t"
        "ldr     %[t], [%[ox], #4]\n\t"
        "ldr     %[v], [%[wb], %[ow]]\n\t"
        "sxtb16  %[ow], %[v]\n\t"
        "sxtb16  %[v], %[v], ror #8\n\t"
        "smlabb  %[a0], %[u], %[ow], %[a0]\n\t"
        "smlatb  %[a1], %[u], %[v], %[a1]\n\t"
        "smlabt  %[a2], %[t], %[ow], %[a2]\n\t"
        "smlatt  %[a3], %[t], %[v], %[a3]\n\t"
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "cmp     %[ox], #0\n\t"
        "bge     1b"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [off] "+r"(off), [ox] "=&r"(ox),
          [ow] "=&r"(ow), [u] "=&r"(u), [v] "=&r"(v), [t] "=&r"(t)
        : [xb] "r"(xb), [wb] "r"(wb)
        : "memory", "cc");
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}
#endif

/* The DSP path (weight_zp 0, multiplier 1, at most TABULA_DW_DSP_TAPS taps; see tabula_dsp.h for the
 * lanes): per output pixel its real taps, listed once as byte offsets from the first real tap (rebuilt
 * only when the clipped window changes, as on the Helium path); per block of 4 channels
 * tabula_dw_dsp_quad; the last C % 4 channels one at a time.  Padded taps are skipped as on the
 * portable path.  int8: the bias starts the sums, modulo 2^32 as there; int16: the tap sums (exact in
 * 32 bits) are added to the 64-bit bias, as the Helium path does. */
static void tabula_dw_dsp(const tabula_window *win, const TABULA_DW_T *input, int32_t input_zp, const int8_t *weight,
                          const TABULA_DW_ACC_T *bias, const tabula_dw_rq *rq, void *output)
{
    const int32_t h = win->h, w = win->w, c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t dy = win->dilation_y, dx = win->dilation_x;
    const int32_t kx2 = tabula_dsp_k2(input_zp), xs = (int32_t)sizeof(TABULA_DW_T);
#if !TABULA_DW_WIDE
    const int32_t fast = rq->requant ? tabula_dsp_shifts_ge33(rq->requant, c) : 0, esize = rq->requant ? 1 : 4;
#endif
    int32_t off[2 * TABULA_DW_DSP_TAPS + 2]; /* per real tap: input, weight byte offset; then -1 */
    int32_t nt = 0, cy0 = -1, cy1 = -1, cx0 = -1, cx1 = -1;
    int32_t b, oy, ox, o, t;
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            int32_t ky0, ky1;
            tabula_dw_taps(iy0, kh, dy, h, &ky0, &ky1);
            for (ox = 0; ox < win->out_w; ++ox) {
                const int32_t ix0 = ox * win->stride_x - win->pad_left;
                const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * c;
#if !TABULA_DW_WIDE
                void *const y = (int8_t *)output + pix * esize; /* the pixel's first output element */
#endif
                const TABULA_DW_T *xb;
                const int8_t *wb;
                int32_t kx0, kx1;
                tabula_dw_taps(ix0, kw, dx, w, &kx0, &kx1);
                if (ky0 == ky1 || kx0 == kx1) { /* no real tap: every channel is its bias */
                    for (o = 0; o < c; ++o) {
                        tabula_dw_put(rq, bias ? bias[o] : 0, o, output, pix);
                    }
                    continue;
                }
                if (ky0 != cy0 || ky1 != cy1 || kx0 != cx0 || kx1 != cx1) {
                    int32_t ky, kx;
                    nt = 0;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx, ++nt) {
                            off[2 * nt] = ((ky - ky0) * dy * w + (kx - kx0) * dx) * c * xs;
                            off[2 * nt + 1] = ((ky - ky0) * kw + (kx - kx0)) * c;
                        }
                    }
                    off[2 * nt] = -1;
                    off[2 * nt + 1] = 0;
                    cy0 = ky0; cy1 = ky1; cx0 = kx0; cx1 = kx1;
                }
                xb = input + ((b * h + iy0 + ky0 * dy) * w + ix0 + kx0 * dx) * c;
                wb = weight + (ky0 * kw + kx0) * c;
                for (o = 0; o + 4 <= c; o += 4) {
                    int32_t a[4];
#if !TABULA_DW_WIDE
                    a[0] = bias ? bias[o] : 0;
                    a[1] = bias ? bias[o + 1] : 0;
                    a[2] = bias ? bias[o + 2] : 0;
                    a[3] = bias ? bias[o + 3] : 0;
                    tabula_dw_dsp_quad(xb + o, wb + o, off, kx2, a);
                    tabula_dsp_out4(rq->requant, fast, a, o, y);
#else
                    int32_t i;
                    a[0] = a[1] = a[2] = a[3] = 0;
                    tabula_dw_dsp_quad(xb + o, wb + o, off, kx2, a);
                    for (i = 0; i < 4; ++i) {
                        tabula_dw_put(rq, TABULA_DW_TO_ACC((TABULA_DW_UACC_T)(bias ? bias[o + i] : 0)
                                                           + (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)a[i]), o + i, output, pix);
                    }
#endif
                }
                for (; o < c; ++o) {
                    TABULA_DW_UACC_T acc = bias ? (TABULA_DW_UACC_T)bias[o] : 0u;
                    for (t = 0; t < nt; ++t) {
                        acc += (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)(((int32_t)xb[o + off[2 * t] / xs] - input_zp)
                                                                   * (int32_t)wb[o + off[2 * t + 1]]);
                    }
                    tabula_dw_put(rq, TABULA_DW_TO_ACC(acc), o, output, pix);
                }
            }
        }
    }
}
#endif

static tabula_status tabula_dw_body(const tabula_window *win, int32_t mult, const TABULA_DW_T *input, int32_t input_zp,
                                    const int8_t *weight, int32_t weight_zp, const TABULA_DW_ACC_T *bias,
                                    const int32_t *requant, void *output)
{
    int32_t b, oy, ox, ky, kx, o, o0;
    int32_t n, h, w, c, oc, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    tabula_dw_rq rq = {0, 0, 0, 0, 0};
    if (!tabula_conv_window_ok(win) || mult < 1 || win->c > INT32_MAX / mult
        || input_zp < TABULA_ZP_MIN(TABULA_DW_T) || input_zp > TABULA_ZP_MAX(TABULA_DW_T)
        || weight_zp < -128 || weight_zp > 127
        || (requant && !tabula_requant_ok(requant, win->c * mult, TABULA_ZP_MIN(TABULA_DW_OUT_T),
                                          TABULA_ZP_MAX(TABULA_DW_OUT_T), TABULA_MIN(TABULA_DW_OUT_T),
                                          TABULA_MAX(TABULA_DW_OUT_T),
                                          TABULA_DW_WIDE ? INT64_C(1) << 15 : INT64_C(1) << 31))) {
        return TABULA_ERR_ARG;
    }
    oc = win->c * mult;
    n = win->n; h = win->h; w = win->w; c = win->c;
    oh = win->out_h; ow = win->out_w; kh = win->kernel_h; kw = win->kernel_w;
    sy = win->stride_y; sx = win->stride_x; dy = win->dilation_y; dx = win->dilation_x;
    pt = win->pad_top; pl = win->pad_left;
    if (requant) {
        rq.requant = requant;
        rq.zp = requant[0]; rq.lo = requant[1]; rq.hi = requant[2];
    }
#if TABULA_HAVE_MVE
    if (weight_zp == 0 && c < 65536 && (int64_t)kh * kw <= TABULA_DW_MVE_TAPS) {
        rq.vec = !TABULA_DW_WIDE && requant && tabula_requant_shifts_min(requant, c * mult) >= 33;
        tabula_dw_mve(win, mult, input, input_zp, weight, bias, &rq, output);
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP
    if (weight_zp == 0 && mult == 1 && (int64_t)kh * kw <= TABULA_DW_DSP_TAPS) {
        tabula_dw_dsp(win, input, input_zp, weight, bias, &rq, output);
        return TABULA_OK;
    }
#endif
    for (b = 0; b < n; ++b) {
        for (oy = 0; oy < oh; ++oy) {
            const int32_t iy0 = oy * sy - pt;
            int32_t ky0, ky1;
            tabula_dw_taps(iy0, kh, dy, h, &ky0, &ky1);
            for (ox = 0; ox < ow; ++ox) {
                const int32_t ix0 = ox * sx - pl;
                const int32_t pix = ((b * oh + oy) * ow + ox) * oc;
                int32_t kx0, kx1;
                tabula_dw_taps(ix0, kw, dx, w, &kx0, &kx1);
                for (o0 = 0; o0 < oc; o0 += TABULA_DW_BLOCK) {
                    const int32_t nb = oc - o0 < TABULA_DW_BLOCK ? oc - o0 : TABULA_DW_BLOCK;
                    TABULA_DW_UACC_T acc[TABULA_DW_BLOCK];
                    for (o = 0; o < nb; ++o) {
                        acc[o] = bias ? (TABULA_DW_UACC_T)bias[o0 + o] : 0u;
                    }
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx) {
                            const TABULA_DW_T *xp = input + ((b * h + iy0 + ky * dy) * w + ix0 + kx * dx) * c;
                            const int8_t *wp = weight + (ky * kw + kx) * oc + o0;
                            if (mult == 1) {
                                xp += o0;
                                for (o = 0; o < nb; ++o) {
                                    const int32_t t = ((int32_t)xp[o] - input_zp) * ((int32_t)wp[o] - weight_zp);
                                    acc[o] += (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)t;
                                }
                            } else { /* output channel o0 + o reads input channel (o0 + o) / M */
                                int32_t i = o0 / mult, j = o0 % mult;
                                for (o = 0; o < nb; ++o) {
                                    const int32_t t = ((int32_t)xp[i] - input_zp) * ((int32_t)wp[o] - weight_zp);
                                    acc[o] += (TABULA_DW_UACC_T)(TABULA_DW_ACC_T)t;
                                    if (++j == mult) {
                                        j = 0;
                                        ++i;
                                    }
                                }
                            }
                        }
                    }
                    for (o = 0; o < nb; ++o) {
                        tabula_dw_put(&rq, TABULA_DW_TO_ACC(acc[o]), o0 + o, output, pix);
                    }
                }
            }
        }
    }
    return TABULA_OK;
}
