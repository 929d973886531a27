/*
 * DSP-extension paths (Cortex-M4, M7, M33: SXTB16 / SXTAB16 widen the even and odd bytes of a word
 * into two 16-bit lanes, SMLAD adds both lanes' products to an accumulator, SMLABB / SMLATT one lane's)
 * of the accumulator kernels: CONV2D, FULLY_CONNECTED here, DEPTHWISE_CONV2D in its typed body
 * (depthwise_conv2d/tabula_depthwise_conv2d_impl.h, beside its Helium path).  Private to the kernel
 * sources (static inline; compiled only where tabula_internal.h sets TABULA_HAVE_DSP: __ARM_FEATURE_DSP,
 * no MVE, not TABULA_PORTABLE_ONLY).  Each kernel function keeps its portable path and calls its DSP
 * path from an `#elif TABULA_HAVE_DSP` beside its Helium one; both give the same bits.
 *
 * Arithmetic: every value is widened as x + k with k = -zero_point in both lanes (SXTAB16), so the lanes
 * hold x - input_zp and w - weight_zp exactly (|.| <= 255, int16); each product is exact, and SMLAD /
 * SMLABB / SMLATT keep the low 32 bits of the sum (they only set the sticky Q flag on overflow): the
 * accumulator is the portable path's, modulo 2^32.  Padded taps hold x - zp = 0 (CONV2D's patch) or
 * are skipped (DEPTHWISE), so they contribute nothing, as on the portable path.  Any input_zp;
 * CONV2D and DEPTHWISE take weight_zp == 0 (symmetric weights, what tabula's quantizer emits; the
 * kernels keep the portable path otherwise), FULLY_CONNECTED any weight_zp.  int16 activations
 * (a16w8) accumulate with SMLALD into 64 bits (the int16 section below) or, DEPTHWISE, in exact 32-bit
 * tap sums added to the 64-bit bias.
 *
 * A word of four int8 b0..b3 (lowest address first) widens to the lanes [b0, b2] (SXTAB16) and
 * [b1, b3] (SXTAB16 ROR #8); SMLAD of two such words sums b0 c0 + b2 c2, of the other two b1 c1 +
 * b3 c3.  So a dot product needs no reordering as long as both sides are widened the same way: the
 * CONV2D patch is stored in that order once per pixel and the weights are widened on load.
 */
#ifndef TABULA_DSP_H
#define TABULA_DSP_H

#include "tabula_internal.h"

#if TABULA_HAVE_DSP
#include <arm_acle.h>
#include <string.h>

/* Four int8 from p (any alignment: LDR on Armv7E-M / Armv8-M Mainline allows unaligned words). */
static inline int32_t tabula_dsp_ld4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Lanes [b0 + k, b2 + k] of the bytes of v (k2: the 16-bit k in both halves). */
static inline int32_t tabula_dsp_even(int32_t k2, int32_t v)
{
    return __sxtab16(k2, v);
}

/* Lanes [b1 + k, b3 + k] of the bytes of v. */
static inline int32_t tabula_dsp_odd(int32_t k2, int32_t v)
{
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(k2), "r"(v));
    return r;
}

/* -zp in both 16-bit lanes (|zp| <= 128: -zp fits int16). */
static inline int32_t tabula_dsp_k2(int32_t zp)
{
    const uint32_t k = (uint32_t)(-zp) & 0xFFFFu;
    return (int32_t)(k | (k << 16));
}

/* 1 when every shift of the requant block (out_c channels) is >= 33, the usual case: then each output
 * takes tabula_dsp_requant33, else tabula_requant32. */
static inline int32_t tabula_dsp_shifts_ge33(const int32_t *requant, int32_t out_c)
{
    int32_t o;
    for (o = 0; o < out_c; ++o) {
        if (requant[4 + 2 * o] < 33) {
            return 0;
        }
    }
    return 1;
}

/* tabula_requant32 for a shift s >= 33 given as s33 = s - 33 (its first branch, in 32-bit operations:
 * hi32(acc m) >> s33, then + 1 >> 1, + zp, clamped to [lo, hi]). */
static inline int32_t tabula_dsp_requant33(int32_t acc, int32_t m, int32_t s33, int32_t zp, int32_t lo, int32_t hi)
{
    const int32_t t = tabula_asr32((int32_t)tabula_asr64((int64_t)acc * m, 32), s33);
    const int32_t v = tabula_asr32(t + 1, 1) + zp;
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Output channel o's accumulator acc into y[o]: int32 (requant NULL), or requantized (fast: every shift
 * >= 33). */
static inline void tabula_dsp_out(const int32_t *requant, int32_t fast, int32_t zp, int32_t lo, int32_t hi,
                                  int32_t acc, int32_t o, void *y)
{
    if (!requant) {
        ((int32_t *)y)[o] = acc;
    } else if (fast) {
        ((int8_t *)y)[o] = (int8_t)tabula_dsp_requant33(acc, requant[3 + 2 * o], requant[4 + 2 * o] - 33, zp, lo, hi);
    } else {
        ((int8_t *)y)[o] = (int8_t)tabula_requant32(acc, requant[3 + 2 * o], requant[4 + 2 * o], zp, lo, hi);
    }
}

/* Four consecutive output channels o .. o + 3 (accumulators a) into y: tabula_dsp_out each.  Not
 * inlined: the callers' loops keep their registers. */
__attribute__((noinline)) static void tabula_dsp_out4(const int32_t *requant, int32_t fast, const int32_t a[4],
                                                      int32_t o, void *y)
{
    const int32_t zp = requant ? requant[0] : 0, lo = requant ? requant[1] : 0, hi = requant ? requant[2] : 0;
    if (requant && fast) {
        const int32_t *ms = requant + 3 + 2 * o;
        int8_t *out = (int8_t *)y + o;
        out[0] = (int8_t)tabula_dsp_requant33(a[0], ms[0], ms[1] - 33, zp, lo, hi);
        out[1] = (int8_t)tabula_dsp_requant33(a[1], ms[2], ms[3] - 33, zp, lo, hi);
        out[2] = (int8_t)tabula_dsp_requant33(a[2], ms[4], ms[5] - 33, zp, lo, hi);
        out[3] = (int8_t)tabula_dsp_requant33(a[3], ms[6], ms[7] - 33, zp, lo, hi);
    } else {
        int32_t i;
        for (i = 0; i < 4; ++i) {
            tabula_dsp_out(requant, fast, zp, lo, hi, a[i], o + i, y);
        }
    }
}

/* ---- CONV2D ------------------------------------------------------------------------------------
 * Two output pixels at a time: each pixel's receptive field (K = KH*KW*Cin values x - input_zp, padded
 * taps 0) is widened once into a patch of 32-bit words, the two pixels interleaved so that one pointer
 * walks both: per group of 4 values, words [A: v0 v2][A: v1 v3][B: v0 v2][B: v1 v3]; the last K % 4
 * values follow as int32 pairs [A][B].  Then per pair of output channels a 2 x 2 block (8 SMLAD per 4
 * values: 16 MACs) reads each weight word once for two pixels and each patch word once for two
 * channels.  An odd pixel or channel at the end runs the block with itself as the partner (the
 * duplicate result is not written).  K <= TABULA_DSP_PATCH_MAX (patch and staging on the stack, 5 KiB);
 * a larger receptive field takes the portable path. */
#define TABULA_DSP_PATCH_MAX 1024

/* Widen groups x 4 int8 from src into words [v0 + k, v2 + k], [v1 + k, v3 + k] at dst[4 g], dst[4 g + 1]
 * (one pixel's half of the interleaved patch). */
static inline void tabula_dsp_widen(const int8_t *src, int32_t groups, int32_t k2, int32_t *dst)
{
    int32_t g;
    for (g = 0; g < groups; ++g, src += 4, dst += 4) {
        const int32_t v = tabula_dsp_ld4(src);
        dst[0] = tabula_dsp_even(k2, v);
        dst[1] = tabula_dsp_odd(k2, v);
    }
}

/* Gather one output pixel's receptive field (top-left input tap iy0, ix0 of batch b) into its half of
 * the patch: x - zp at a real tap, fill - zp at a padded one (tabula_conv2d_s8: zp = fill = input_zp,
 * so 0; tabula_conv2d_s8_folded: zp 0, fill = pad_value).  Cin % 4 == 0: each real tap is widened
 * straight from the input, a padded one is fill - zp in every lane; otherwise the K int8 values are
 * first copied in order into stage (padded taps: fill; a kernel row inside the input with dilation_x 1
 * in one copy of kw * c bytes) and widened from there, the K % 4 values at the end one per word. */
static inline void tabula_dsp_conv_gather(const tabula_window *win, const int8_t *input, int32_t zp, int32_t fill,
                                          int32_t b, int32_t iy0, int32_t ix0, int8_t *stage, int32_t *patch,
                                          int32_t half)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t k2 = tabula_dsp_k2(zp), pad2 = tabula_dsp_k2(zp - fill); /* fill - zp in both lanes */
    int32_t ky, kx;
    if ((c & 3) == 0) {
        int32_t *dst = patch + 2 * half;
        const int32_t groups = c >> 2;
        for (ky = 0; ky < kh; ++ky) {
            const int32_t iy = iy0 + ky * win->dilation_y;
            for (kx = 0; kx < kw; ++kx, dst += 4 * groups) {
                const int32_t ix = ix0 + kx * win->dilation_x;
                if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
                    int32_t g;
                    for (g = 0; g < groups; ++g) {
                        dst[4 * g] = pad2;
                        dst[4 * g + 1] = pad2;
                    }
                } else {
                    tabula_dsp_widen(input + ((b * win->h + iy) * win->w + ix) * c, groups, k2, dst);
                }
            }
        }
    } else {
        const int32_t len = kh * kw * c, groups = len >> 2;
        int8_t *s = stage;
        int32_t j;
        const int32_t row_inside = win->dilation_x == 1 && ix0 >= 0 && ix0 + kw <= win->w;
        for (ky = 0; ky < kh; ++ky) {
            const int32_t iy = iy0 + ky * win->dilation_y;
            if (row_inside && iy >= 0 && iy < win->h) { /* the kernel row's kw taps: kw * c contiguous bytes */
                memcpy(s, input + ((b * win->h + iy) * win->w + ix0) * c, (size_t)(kw * c));
                s += kw * c;
                continue;
            }
            for (kx = 0; kx < kw; ++kx, s += c) {
                const int32_t ix = ix0 + kx * win->dilation_x;
                if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
                    if (c == 1) {
                        s[0] = (int8_t)fill;
                    } else {
                        memset(s, (int)fill, (size_t)c);
                    }
                } else if (c == 1) {
                    s[0] = input[(b * win->h + iy) * win->w + ix];
                } else {
                    memcpy(s, input + ((b * win->h + iy) * win->w + ix) * c, (size_t)c);
                }
            }
        }
        tabula_dsp_widen(stage, groups, k2, patch + 2 * half);
        for (j = 4 * groups; j < len; ++j) {
            patch[4 * groups + 2 * (j - 4 * groups) + half] = (int32_t)stage[j] - zp;
        }
    }
}

/* Lanes [b0, b2] of the bytes of v. */
static inline int32_t tabula_dsp_sxtb16(int32_t v)
{
    return __sxtb16(v);
}

/* Lanes [b1, b3] of the bytes of v. */
static inline int32_t tabula_dsp_sxtb16_ror8(int32_t v)
{
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}

/* The 2 x 2 block (weight_zp == 0): acc[2 i + p] += sum over the patch of pixel p's values times
 * channel i's weights (w0: channel 0's K weights; channel 1's follow at w0 + w1off).  Its loop takes 13
 * registers: it is inlined only into tabula_dsp_conv_pixels, a small function of its own. */
static inline void tabula_dsp_conv_block(const int32_t *patch, const int8_t *w0, int32_t w1off, int32_t len,
                                          int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const int32_t *p = patch;
    int32_t n = len >> 2, j;
    if (n > 0) {
        /* per 4 values: channel 0's weight word widened (2 SXTB16), pixel A's two patch words then
         * pixel B's (LDRD), 4 SMLAD; channel 1's word, B's words still loaded, A's again: 19
         * instructions per 16 MACs with the loop, in 13 registers */
        int32_t t0, t1, t2, x0, x1;
        __asm__ volatile(
            "1:\n\t"
            "ldr    %[t0], [%[w], %[off]]\n\t"
            "ldr    %[t1], [%[w]], #4\n\t"
            "sxtb16 %[t2], %[t1]\n\t"
            "sxtb16 %[t1], %[t1], ror #8\n\t"
            "ldrd   %[x0], %[x1], [%[p]]\n\t"
            "smlad  %[a00], %[x0], %[t2], %[a00]\n\t"
            "smlad  %[a00], %[x1], %[t1], %[a00]\n\t"
            "ldrd   %[x0], %[x1], [%[p], #8]\n\t"
            "smlad  %[a01], %[x0], %[t2], %[a01]\n\t"
            "smlad  %[a01], %[x1], %[t1], %[a01]\n\t"
            "sxtb16 %[t2], %[t0]\n\t"
            "sxtb16 %[t0], %[t0], ror #8\n\t"
            "smlad  %[a11], %[x0], %[t2], %[a11]\n\t"
            "smlad  %[a11], %[x1], %[t0], %[a11]\n\t"
            "ldrd   %[x0], %[x1], [%[p]], #16\n\t"
            "smlad  %[a10], %[x0], %[t2], %[a10]\n\t"
            "smlad  %[a10], %[x1], %[t0], %[a10]\n\t"
            "subs   %[n], %[n], #1\n\t"
            "bne    1b"
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [p] "+r"(p), [w] "+r"(w0),
              [n] "+r"(n), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [x0] "=&r"(x0), [x1] "=&r"(x1)
            : [off] "r"(w1off)
            : "memory", "cc");
    }
    for (j = 0; j < (len & 3); ++j, p += 2) {
        const uint32_t c0 = (uint32_t)(int32_t)w0[j], c1 = (uint32_t)(int32_t)w0[j + w1off];
        a00 = (int32_t)((uint32_t)a00 + (uint32_t)p[0] * c0);
        a01 = (int32_t)((uint32_t)a01 + (uint32_t)p[1] * c0);
        a10 = (int32_t)((uint32_t)a10 + (uint32_t)p[0] * c1);
        a11 = (int32_t)((uint32_t)a11 + (uint32_t)p[1] * c1);
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/* Every output channel of a pixel pair (A and B: yb, or NULL when A has no partner) from the
 * interleaved patch: channel pairs through tabula_dsp_conv_block, then the epilogue (ya, yb: the pixels'
 * first output elements).  A function of its own (not inlined): the block's 13 registers. */
__attribute__((noinline)) static void tabula_dsp_conv_pixels(const int32_t *patch, const int8_t *weight, int32_t len,
                                                             int32_t out_c, const int32_t *bias,
                                                             const int32_t *requant, int32_t fast, void *ya, void *yb)
{
    const int32_t zp = requant ? requant[0] : 0, lo = requant ? requant[1] : 0, hi = requant ? requant[2] : 0;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 2) {
        const int32_t o1 = oc + 1 < out_c ? oc + 1 : oc;
        int32_t acc[4];
        acc[0] = acc[1] = bias ? bias[oc] : 0;
        acc[2] = acc[3] = bias ? bias[o1] : 0;
        tabula_dsp_conv_block(patch, weight + oc * len, (o1 - oc) * len, len, acc);
        tabula_dsp_out(requant, fast, zp, lo, hi, acc[0], oc, ya);
        if (yb) {
            tabula_dsp_out(requant, fast, zp, lo, hi, acc[1], oc, yb);
        }
        if (o1 != oc) {
            tabula_dsp_out(requant, fast, zp, lo, hi, acc[2], o1, ya);
            if (yb) {
                tabula_dsp_out(requant, fast, zp, lo, hi, acc[3], o1, yb);
            }
        }
    }
}

/* The whole CONV2D on the DSP path (arguments checked by the caller; weight_zp == 0, kh * kw * c <=
 * TABULA_DSP_PATCH_MAX): acc = bias + sum over the window of (x - zp) w, padded taps (fill - zp) w
 * (tabula_dsp_conv_gather: zp = fill = input_zp for tabula_conv2d_s8, zp 0 and fill = pad_value for
 * tabula_conv2d_s8_folded). */
static inline void tabula_dsp_conv2d_s8(const tabula_window *win, int32_t out_c, const int8_t *input, int32_t zp,
                                        int32_t fill, const int8_t *weight, const int32_t *bias,
                                        const int32_t *requant, void *output)
{
    int32_t patch[TABULA_DSP_PATCH_MAX + 8]; /* 2 pixels: 2 words per 4 values each, 1 per tail value */
    int8_t stage[TABULA_DSP_PATCH_MAX];
    const int32_t len = win->kernel_h * win->kernel_w * win->c;
    const int32_t ohw = win->out_h * win->out_w, npix = win->n * ohw;
    const int32_t fast = requant ? tabula_dsp_shifts_ge33(requant, out_c) : 0;
    const int32_t esize = requant ? 1 : 4; /* bytes per output element */
    int32_t p;
    for (p = 0; p < npix; p += 2) {
        const int32_t two = p + 1 < npix; /* a second pixel (else pixel p is its own partner) */
        int32_t q;
        for (q = 0; q < 2; ++q) {
            const int32_t pix = p + (q && two), b = pix / ohw, r = pix % ohw;
            const int32_t oy = r / win->out_w, ox = r % win->out_w;
            tabula_dsp_conv_gather(win, input, zp, fill, b, oy * win->stride_y - win->pad_top,
                                   ox * win->stride_x - win->pad_left, stage, patch, q);
        }
        tabula_dsp_conv_pixels(patch, weight, len, out_c, bias, requant, fast,
                               (int8_t *)output + p * out_c * esize,
                               two ? (void *)((int8_t *)output + (p + 1) * out_c * esize) : 0);
    }
}

/* ---- FULLY_CONNECTED ----------------------------------------------------------------------------
 * With weight_zp == 0 and in_c <= TABULA_DSP_FC_MAX, each batch row's input is widened once (x -
 * input_zp, words [v0, v2], [v1, v3] per 4 values, on the stack) and four weight rows at a time are
 * multiplied into four accumulators: per 4 inputs one LDRD of the widened input, per row one weight
 * word widened (2 SXTB16) and 2 SMLAD (23 instructions per 16 MACs with the loop).  Otherwise, and
 * for the last out_c % 4 rows, each input word is widened as it is read (SXTAB16 with -input_zp, the
 * weights with -weight_zp).  The last in_c % 4 values are scalar. */
#define TABULA_DSP_FC_MAX 2048

/* Rows 0..3 (w0: row 0, row r at w0 + r * stride) times the widened input xw (n >= 1 groups of 4).  Not
 * inlined: its loop takes 13 registers, which only a function of its own always has. */
__attribute__((noinline)) static void tabula_dsp_fc_quad(const int32_t *xw, const int8_t *w0, int32_t stride, int32_t n, int32_t a[4])
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], xe, xo, v, t;
    const int8_t *w2 = w0 + 2 * stride;
    __asm__ volatile(
        "1:\n\t"
        "ldrd   %[xe], %[xo], [%[xw]], #8\n\t"
        "ldr    %[v], [%[w0], %[k]]\n\t"
        "sxtb16 %[t], %[v]\n\t"
        "sxtb16 %[v], %[v], ror #8\n\t"
        "smlad  %[a1], %[xe], %[t], %[a1]\n\t"
        "smlad  %[a1], %[xo], %[v], %[a1]\n\t"
        "ldr    %[v], [%[w0]], #4\n\t"
        "sxtb16 %[t], %[v]\n\t"
        "sxtb16 %[v], %[v], ror #8\n\t"
        "smlad  %[a0], %[xe], %[t], %[a0]\n\t"
        "smlad  %[a0], %[xo], %[v], %[a0]\n\t"
        "ldr    %[v], [%[w2], %[k]]\n\t"
        "sxtb16 %[t], %[v]\n\t"
        "sxtb16 %[v], %[v], ror #8\n\t"
        "smlad  %[a3], %[xe], %[t], %[a3]\n\t"
        "smlad  %[a3], %[xo], %[v], %[a3]\n\t"
        "ldr    %[v], [%[w2]], #4\n\t"
        "sxtb16 %[t], %[v]\n\t"
        "sxtb16 %[v], %[v], ror #8\n\t"
        "smlad  %[a2], %[xe], %[t], %[a2]\n\t"
        "smlad  %[a2], %[xo], %[v], %[a2]\n\t"
        "subs   %[n], %[n], #1\n\t"
        "bne    1b"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xw] "+r"(xw), [w0] "+r"(w0), [w2] "+r"(w2),
          [n] "+r"(n), [xe] "=&r"(xe), [xo] "=&r"(xo), [v] "=&r"(v), [t] "=&r"(t)
        : [k] "r"(stride)
        : "memory", "cc");
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

static inline void tabula_dsp_fully_connected_s8(int32_t n, int32_t in_c, int32_t out_c, const int8_t *input,
                                                 int32_t input_zp, const int8_t *weight, int32_t weight_zp,
                                                 const int32_t *bias, const int32_t *requant, void *output)
{
    int32_t xw[TABULA_DSP_FC_MAX / 2]; /* the widened input: 2 words per 4 values */
    const int32_t kx2 = tabula_dsp_k2(input_zp), kw2 = tabula_dsp_k2(weight_zp);
    const int32_t groups = in_c >> 2, body = in_c & ~3;
    const int32_t packed = weight_zp == 0 && groups > 0 && in_c <= TABULA_DSP_FC_MAX;
    const int32_t rq_zp = requant ? requant[0] : 0, rq_lo = requant ? requant[1] : 0, rq_hi = requant ? requant[2] : 0;
    const int32_t fast = requant ? tabula_dsp_shifts_ge33(requant, out_c) : 0, esize = requant ? 1 : 4;
    int32_t b, o, j, g;
    for (b = 0; b < n; ++b) {
        const int8_t *xp = input + b * in_c;
        void *const y = (int8_t *)output + b * out_c * esize; /* the row's first output element */
        o = 0;
        if (packed) {
            for (g = 0; g < groups; ++g) {
                const int32_t u = tabula_dsp_ld4(xp + 4 * g);
                xw[2 * g] = tabula_dsp_even(kx2, u);
                xw[2 * g + 1] = tabula_dsp_odd(kx2, u);
            }
            for (; o + 4 <= out_c; o += 4) {
                const int8_t *w0 = weight + o * in_c;
                int32_t a[4];
                a[0] = bias ? bias[o] : 0;
                a[1] = bias ? bias[o + 1] : 0;
                a[2] = bias ? bias[o + 2] : 0;
                a[3] = bias ? bias[o + 3] : 0;
                tabula_dsp_fc_quad(xw, w0, in_c, groups, a);
                for (j = body; j < in_c; ++j) {
                    const uint32_t xv = (uint32_t)((int32_t)xp[j] - input_zp);
                    a[0] = (int32_t)((uint32_t)a[0] + xv * (uint32_t)(int32_t)w0[j]);
                    a[1] = (int32_t)((uint32_t)a[1] + xv * (uint32_t)(int32_t)w0[j + in_c]);
                    a[2] = (int32_t)((uint32_t)a[2] + xv * (uint32_t)(int32_t)w0[j + 2 * in_c]);
                    a[3] = (int32_t)((uint32_t)a[3] + xv * (uint32_t)(int32_t)w0[j + 3 * in_c]);
                }
                tabula_dsp_out4(requant, fast, a, o, y);
            }
        }
        for (; o < out_c; ++o) {
            const int8_t *w0 = weight + o * in_c;
            int32_t a0 = bias ? bias[o] : 0;
            for (g = 0; g < groups; ++g) {
                const int32_t u = tabula_dsp_ld4(xp + 4 * g), v = tabula_dsp_ld4(w0 + 4 * g);
                a0 = __smlad(tabula_dsp_even(kx2, u), tabula_dsp_even(kw2, v), a0);
                a0 = __smlad(tabula_dsp_odd(kx2, u), tabula_dsp_odd(kw2, v), a0);
            }
            for (j = body; j < in_c; ++j) {
                a0 = (int32_t)((uint32_t)a0 + (uint32_t)((int32_t)xp[j] - input_zp) * (uint32_t)((int32_t)w0[j] - weight_zp));
            }
            tabula_dsp_out(requant, fast, rq_zp, rq_lo, rq_hi, a0, o, y);
        }
    }
}
/* ---- int16 activations x int8 weights (a16w8): CONV2D and FULLY_CONNECTED -----------------------
 * int16 inputs are symmetric (no zero point).  The receptive field of one pixel (CONV2D) or one input
 * row (FULLY_CONNECTED) is stored once as words [x0, x2], [x1, x3] per 4 values (PKHBT / PKHTB of the
 * natural pairs: the order SXTB16 / SXTB16 ROR 8 give the weights), the K % 4 values at the end one
 * per word; then two output channels at a time (weight_zp == 0), each pair of 16-bit products added
 * to a 64-bit accumulator by SMLALD (modulo 2^64, like the portable path: the same bits; every product
 * |x w| <= 2^22 is exact). */

/* Words [x0, x2], [x1, x3] of the 4 int16 at src (any 2-byte alignment) at dst[0], dst[1]. */
static inline void tabula_dsp_pack16(const int16_t *src, int32_t *dst)
{
    uint32_t a, b;
    memcpy(&a, src, 4);
    memcpy(&b, src + 2, 4);
    dst[0] = (int32_t)((a & 0xFFFFu) | (b << 16));
    dst[1] = (int32_t)((a >> 16) | (b & 0xFFFF0000u));
}

/* Widen len int16 values at src into dst (2 words per 4, then one per value). */
static inline void tabula_dsp_pack16_row(const int16_t *src, int32_t len, int32_t *dst)
{
    const int32_t groups = len >> 2;
    int32_t g, j;
    for (g = 0; g < groups; ++g) {
        tabula_dsp_pack16(src + 4 * g, dst + 2 * g);
    }
    for (j = 4 * groups; j < len; ++j) {
        dst[2 * groups + (j - 4 * groups)] = src[j];
    }
}

/* acc[i] += sum_j x[j] w_i[j] (64-bit, modulo 2^64) over the len values of the packed row xw, for two
 * weight rows: w0 and w0 + w1off (weight_zp 0).  Not inlined: its loop takes 13 registers. */
__attribute__((noinline)) static void tabula_dsp_dot2_s16(const int32_t *xw, const int8_t *w0, int32_t w1off,
                                                          int32_t len, int64_t acc[2])
{
    uint32_t l0 = (uint32_t)(uint64_t)acc[0], h0 = (uint32_t)((uint64_t)acc[0] >> 32);
    uint32_t l1 = (uint32_t)(uint64_t)acc[1], h1 = (uint32_t)((uint64_t)acc[1] >> 32);
    const int32_t *p = xw;
    int32_t n = len >> 2, j;
    if (n > 0) {
        int32_t t0, t1, t2, x0, x1;
        __asm__ volatile(
            "1:\n\t"
            "ldr    %[t0], [%[w], %[off]]\n\t"
            "ldr    %[t1], [%[w]], #4\n\t"
            "ldrd   %[x0], %[x1], [%[p]], #8\n\t"
            "sxtb16 %[t2], %[t1]\n\t"
            "sxtb16 %[t1], %[t1], ror #8\n\t"
            "smlald %[l0], %[h0], %[x0], %[t2]\n\t"
            "smlald %[l0], %[h0], %[x1], %[t1]\n\t"
            "sxtb16 %[t2], %[t0]\n\t"
            "sxtb16 %[t0], %[t0], ror #8\n\t"
            "smlald %[l1], %[h1], %[x0], %[t2]\n\t"
            "smlald %[l1], %[h1], %[x1], %[t0]\n\t"
            "subs   %[n], %[n], #1\n\t"
            "bne    1b"
            : [l0] "+r"(l0), [h0] "+r"(h0), [l1] "+r"(l1), [h1] "+r"(h1), [p] "+r"(p), [w] "+r"(w0), [n] "+r"(n),
              [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [x0] "=&r"(x0), [x1] "=&r"(x1)
            : [off] "r"(w1off)
            : "memory", "cc");
    }
    acc[0] = tabula_u64_to_s64(((uint64_t)h0 << 32) | l0);
    acc[1] = tabula_u64_to_s64(((uint64_t)h1 << 32) | l1);
    for (j = 0; j < (len & 3); ++j) {
        acc[0] = tabula_u64_to_s64((uint64_t)acc[0] + (uint64_t)(int64_t)(p[j] * (int32_t)w0[j]));
        acc[1] = tabula_u64_to_s64((uint64_t)acc[1] + (uint64_t)(int64_t)(p[j] * (int32_t)w0[j + w1off]));
    }
}

/* The accumulator acc of output channel o at element idx: requantized to int16 (requant != NULL:
 * apply_scale_16) or as is (int64). */
static inline void tabula_dsp_put48(const int32_t *requant, int32_t zp, int32_t lo, int32_t hi, int64_t acc,
                                    int32_t o, void *output, int32_t idx)
{
    if (requant) {
        ((int16_t *)output)[idx] = (int16_t)tabula_requant48(acc, requant[3 + 2 * o], requant[4 + 2 * o], zp, lo, hi);
    } else {
        ((int64_t *)output)[idx] = acc;
    }
}

/* Two rows (o, o1: o1 == o for a last odd one) of the packed row xw: bias, dot products, outputs at
 * idx0 + o and idx0 + o1. */
static inline void tabula_dsp_rows2_s16(const int32_t *xw, int32_t len, const int8_t *weight, int32_t o, int32_t o1,
                                        const int64_t *bias, const int32_t *requant, int32_t zp, int32_t lo,
                                        int32_t hi, void *output, int32_t idx0)
{
    int64_t acc[2];
    acc[0] = bias ? bias[o] : 0;
    acc[1] = bias ? bias[o1] : 0;
    tabula_dsp_dot2_s16(xw, weight + o * len, (o1 - o) * len, len, acc);
    tabula_dsp_put48(requant, zp, lo, hi, acc[0], o, output, idx0 + o);
    if (o1 != o) {
        tabula_dsp_put48(requant, zp, lo, hi, acc[1], o1, output, idx0 + o1);
    }
}

/* CONV2D int16 x int8 on the DSP path (weight_zp == 0, kh * kw * c <= TABULA_DSP_PATCH_MAX; arguments
 * checked by the caller): per output pixel the patch (padded taps 0) packed once, then two output
 * channels per tabula_dsp_dot2_s16. */
static inline void tabula_dsp_conv2d_s16(const tabula_window *win, int32_t out_c, const int16_t *input,
                                         const int8_t *weight, const int64_t *bias, const int32_t *requant,
                                         void *output)
{
    int16_t stage[TABULA_DSP_PATCH_MAX];
    int32_t xw[TABULA_DSP_PATCH_MAX / 2 + 4];
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w, len = kh * kw * c;
    const int32_t rq_zp = requant ? requant[0] : 0, rq_lo = requant ? requant[1] : 0, rq_hi = requant ? requant[2] : 0;
    int32_t b, oy, ox, ky, kx, oc;
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            for (ox = 0; ox < win->out_w; ++ox) {
                const int32_t ix0 = ox * win->stride_x - win->pad_left;
                const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * out_c;
                int16_t *s = stage;
                for (ky = 0; ky < kh; ++ky) {
                    const int32_t iy = iy0 + ky * win->dilation_y;
                    for (kx = 0; kx < kw; ++kx, s += c) {
                        const int32_t ix = ix0 + kx * win->dilation_x;
                        if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
                            memset(s, 0, (size_t)c * sizeof(int16_t));
                        } else {
                            memcpy(s, input + ((b * win->h + iy) * win->w + ix) * c, (size_t)c * sizeof(int16_t));
                        }
                    }
                }
                tabula_dsp_pack16_row(stage, len, xw);
                for (oc = 0; oc < out_c; oc += 2) {
                    tabula_dsp_rows2_s16(xw, len, weight, oc, oc + 1 < out_c ? oc + 1 : oc, bias, requant, rq_zp,
                                         rq_lo, rq_hi, output, pix);
                }
            }
        }
    }
}

/* FULLY_CONNECTED int16 x int8 on the DSP path (weight_zp == 0, in_c <= TABULA_DSP_FC_MAX): each input
 * row packed once, then two weight rows per tabula_dsp_dot2_s16. */
static inline void tabula_dsp_fully_connected_s16(int32_t n, int32_t in_c, int32_t out_c, const int16_t *input,
                                                  const int8_t *weight, const int64_t *bias,
                                                  const int32_t *requant, void *output)
{
    int32_t xw[TABULA_DSP_FC_MAX / 2 + 4];
    const int32_t rq_zp = requant ? requant[0] : 0, rq_lo = requant ? requant[1] : 0, rq_hi = requant ? requant[2] : 0;
    int32_t b, o;
    for (b = 0; b < n; ++b) {
        tabula_dsp_pack16_row(input + b * in_c, in_c, xw);
        for (o = 0; o < out_c; o += 2) {
            tabula_dsp_rows2_s16(xw, in_c, weight, o, o + 1 < out_c ? o + 1 : o, bias, requant, rq_zp, rq_lo, rq_hi,
                                 output, b * out_c);
        }
    }
}
#endif /* TABULA_HAVE_DSP */

#endif /* TABULA_DSP_H */
