/*
 * The int8 DSP-extension path of CONV2D (Cortex-M4, M7, M33; the lanes and the arithmetic: tabula_dsp.h):
 * tabula_conv2d_s8 and tabula_conv2d_s8_folded (tabula_dsp_conv2d_s8).  (tabula_conv2d_s16's DSP path is
 * the patch path of tabula_conv2d_impl.h with tabula_dsp.h's int16 dot products.)  Private to conv2d/;
 * compiled where TABULA_HAVE_DSP.
 */
#ifndef TABULA_CONV2D_DSP_H
#define TABULA_CONV2D_DSP_H

#include "tabula_dsp.h"

#if TABULA_HAVE_DSP

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

#if TABULA_USE_ASM
/* The 2 x 2 block's passes in assembly, as in tabula_dsp_conv_block: 8 values (w0, w1: the two channels'
 * word-aligned rows, p the interleaved patch; all three advanced). */
#define TABULA_DSP_CONV_PASS8                                                                             \
    "ldrd   %[t0], %[t1], [%[w]], #8\n\t"                                                                 \
    "sxtb16 %[t2], %[t0]\n\t"                                                                             \
    "sxtb16 %[t0], %[t0], ror #8\n\t"                                                                     \
    "ldrd   %[x0], %[x1], [%[p]]\n\t"                                                                     \
    "smlad  %[a00], %[x0], %[t2], %[a00]\n\t"                                                             \
    "smlad  %[a00], %[x1], %[t0], %[a00]\n\t"                                                             \
    "ldrd   %[x0], %[x1], [%[p], #8]\n\t"                                                                 \
    "smlad  %[a01], %[x0], %[t2], %[a01]\n\t"                                                             \
    "smlad  %[a01], %[x1], %[t0], %[a01]\n\t"                                                             \
    "sxtb16 %[t2], %[t1]\n\t"                                                                             \
    "sxtb16 %[t1], %[t1], ror #8\n\t"                                                                     \
    "ldrd   %[x0], %[x1], [%[p], #24]\n\t"                                                                \
    "smlad  %[a01], %[x0], %[t2], %[a01]\n\t"                                                             \
    "smlad  %[a01], %[x1], %[t1], %[a01]\n\t"                                                             \
    "ldrd   %[x0], %[x1], [%[p], #16]\n\t"                                                                \
    "smlad  %[a00], %[x0], %[t2], %[a00]\n\t"                                                             \
    "smlad  %[a00], %[x1], %[t1], %[a00]\n\t"                                                             \
    "ldrd   %[t0], %[t1], [%[w1]], #8\n\t"                                                                \
    "sxtb16 %[t2], %[t1]\n\t"                                                                             \
    "sxtb16 %[t1], %[t1], ror #8\n\t"                                                                     \
    "smlad  %[a10], %[x0], %[t2], %[a10]\n\t"                                                             \
    "smlad  %[a10], %[x1], %[t1], %[a10]\n\t"                                                             \
    "ldrd   %[x0], %[x1], [%[p], #24]\n\t"                                                                \
    "smlad  %[a11], %[x0], %[t2], %[a11]\n\t"                                                             \
    "smlad  %[a11], %[x1], %[t1], %[a11]\n\t"                                                             \
    "sxtb16 %[t2], %[t0]\n\t"                                                                             \
    "sxtb16 %[t0], %[t0], ror #8\n\t"                                                                     \
    "ldrd   %[x0], %[x1], [%[p], #8]\n\t"                                                                 \
    "smlad  %[a11], %[x0], %[t2], %[a11]\n\t"                                                             \
    "smlad  %[a11], %[x1], %[t0], %[a11]\n\t"                                                             \
    "ldrd   %[x0], %[x1], [%[p]], #32\n\t"                                                                \
    "smlad  %[a10], %[x0], %[t2], %[a10]\n\t"                                                             \
    "smlad  %[a10], %[x1], %[t0], %[a10]\n\t"
#endif

/* The 2 x 2 block (weight_zp == 0): acc[2 i + p] += sum over the patch of pixel p's values times
 * channel i's weights (w0: channel 0's K weights; channel 1's follow at w0 + w1off).  Its loop takes 13
 * registers: it is inlined only into tabula_dsp_conv_pixels, a small function of its own. */
static inline void tabula_dsp_conv_block(const int32_t *patch, const int8_t *w0, int32_t w1off, int32_t len,
                                          int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const int32_t *p = patch;
    int32_t n = len >> 2, j;
#if TABULA_USE_ASM
    if (n > 1 && (((uint32_t)(uintptr_t)w0 | (uint32_t)w1off) & 3u) == 0) { /* LDRD: word-aligned rows */
        /* per 8 values: channel 0's 8 weights (LDRD, 4 SXTB16) against pixel A's and B's two groups
         * (4 LDRD), then channel 1's against the same groups read back in reverse (the last one still
         * loaded: 3 LDRD), 16 SMLAD: 35 instructions per 32 MACs with the loop, in 13 registers */
        const int8_t *w1 = w0 + w1off;
        int32_t t0, t1, t2, x0, x1, n8 = n >> 1;
        __asm__ volatile(
            "1:\n\t"
            TABULA_DSP_CONV_PASS8
            "subs   %[n8], %[n8], #1\n\t"
            "bne    1b"
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [p] "+r"(p), [w] "+r"(w0),
              [w1] "+r"(w1), [n8] "+r"(n8), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [x0] "=&r"(x0),
              [x1] "=&r"(x1)
            :
            : "memory", "cc");
        n &= 1; /* a last group of 4 below */
    }
#endif
    if (n > 0) {
#if TABULA_USE_ASM
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
#else /* the C twin: the same SMLAD sums */
        for (; n > 0; --n, p += 4, w0 += 4) {
            const int32_t v0 = tabula_dsp_ld4(w0), v1 = tabula_dsp_ld4(w0 + w1off);
            const int32_t e0 = __sxtb16(v0), o0 = __sxtb16(tabula_dsp_ror8(v0));
            const int32_t e1 = __sxtb16(v1), o1 = __sxtb16(tabula_dsp_ror8(v1));
            a00 = __smlad(p[1], o0, __smlad(p[0], e0, a00));
            a01 = __smlad(p[3], o0, __smlad(p[2], e0, a01));
            a10 = __smlad(p[1], o1, __smlad(p[0], e1, a10));
            a11 = __smlad(p[3], o1, __smlad(p[2], e1, a11));
        }
#endif
    }
    for (j = 0; j < (len & 3); ++j, p += 2) {
        const uint32_t c0 = (uint32_t)(int32_t)w0[j], c1 = (uint32_t)(int32_t)w0[j + w1off];
        a00 = (int32_t)((uint32_t)a00 + (uint32_t)p[0] * c0);
        a01 = (int32_t)((uint32_t)a01 + (uint32_t)p[1] * c0);
        a10 = (int32_t)((uint32_t)a10 + (uint32_t)p[0] * c1);
        a11 = (int32_t)((uint32_t)a11 + (uint32_t)p[1] * c1);
    }
    TABULA_DSP_PUT4(acc, a00, a01, a10, a11);
}

/* Every output channel of a pixel pair (A and B: yb, or NULL when A has no partner) from the
 * interleaved patch: channel pairs through tabula_dsp_conv_block, then the epilogue (ya, yb: the pixels'
 * first output elements).  A function of its own (not inlined): the block's 13 registers. */
__attribute__((noinline)) static void tabula_dsp_conv_pixels(const int32_t *patch, const int8_t *weight, int32_t len,
                                                             int32_t out_c, const int32_t *bias,
                                                             const tabula_requant *rq, int32_t ge33, void *ya,
                                                             void *yb)
{
    const int32_t zp = rq ? rq->output_zp : 0, lo = rq ? rq->out_min : 0, hi = rq ? rq->out_max : 0;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 2) {
        const int32_t o1 = oc + 1 < out_c ? oc + 1 : oc;
        int32_t acc[4];
        acc[0] = acc[1] = bias ? bias[oc] : 0;
        acc[2] = acc[3] = bias ? bias[o1] : 0;
        tabula_dsp_conv_block(patch, weight + oc * len, (o1 - oc) * len, len, acc);
        if (ge33 == TABULA_DSP_RQ8) { /* each channel's multiplier and shift read once for both pixels */
            const int32_t *ms = tabula_requant_words(rq) + TABULA_REQUANT_HEAD + 2 * oc;
            const int32_t m0 = ms[0], s0 = ms[1];
            int8_t *const a8 = (int8_t *)ya, *const b8 = (int8_t *)yb;
            a8[oc] = (int8_t)tabula_dsp_rq8(acc[0], m0, s0, zp);
            if (b8) {
                b8[oc] = (int8_t)tabula_dsp_rq8(acc[1], m0, s0, zp);
            }
            if (o1 != oc) {
                const int32_t m1 = ms[2], s1 = ms[3];
                a8[o1] = (int8_t)tabula_dsp_rq8(acc[2], m1, s1, zp);
                if (b8) {
                    b8[o1] = (int8_t)tabula_dsp_rq8(acc[3], m1, s1, zp);
                }
            }
            continue;
        }
        tabula_dsp_store_acc32(rq, ge33, zp, lo, hi, acc[0], oc, ya);
        if (yb) {
            tabula_dsp_store_acc32(rq, ge33, zp, lo, hi, acc[1], oc, yb);
        }
        if (o1 != oc) {
            tabula_dsp_store_acc32(rq, ge33, zp, lo, hi, acc[2], o1, ya);
            if (yb) {
                tabula_dsp_store_acc32(rq, ge33, zp, lo, hi, acc[3], o1, yb);
            }
        }
    }
}


/* A pixel pair with both pixels (ya, yb: their first outputs), every channel pair full (out_c even),
 * len % 4 == 0 with word-aligned weights, and a TABULA_DSP_RQ8 block: per channel pair the block's
 * passes (8 values, then a last 4) and the four outputs by tabula_dsp_rq8, each channel's multiplier and
 * shift read once for both pixels.  The same sums as tabula_dsp_conv_block.  Not inlined: the passes'
 * 13 registers. */
__attribute__((noinline)) static void tabula_dsp_conv_pixels_rq8(const int32_t *patch, const int8_t *weight,
                                                                 int32_t len, int32_t out_c, const int32_t *bias,
                                                                 const tabula_requant *rq, int8_t *ya, int8_t *yb)
{
    const int32_t zp = rq->output_zp, n8 = len >> 3, n4 = (len >> 2) & 1;
    const int32_t *ms = tabula_requant_words(rq) + TABULA_REQUANT_HEAD;
    int32_t oc;
    for (oc = 0; oc < out_c; oc += 2, ms += 4) {
        int32_t a00 = bias ? bias[oc] : 0, a10 = bias ? bias[oc + 1] : 0, a01 = a00, a11 = a10;
        const int8_t *w0 = weight + oc * len;
#if TABULA_USE_ASM
        const int8_t *w1 = w0 + len;
        const int32_t *p = patch;
        int32_t t0, t1, t2, x0, x1, n = n8;
        if (n > 0) {
            __asm__ volatile(
                "1:\n\t"
                TABULA_DSP_CONV_PASS8
                "subs   %[n], %[n], #1\n\t"
                "bne    1b"
                : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [p] "+r"(p), [w] "+r"(w0),
                  [w1] "+r"(w1), [n] "+r"(n), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [x0] "=&r"(x0),
                  [x1] "=&r"(x1)
                :
                : "memory", "cc");
        }
        if (n4) { /* the last 4 values */
            const int32_t v0 = tabula_dsp_ld4(w0), v1 = tabula_dsp_ld4(w1);
            const int32_t e0 = __sxtb16(v0), o0 = __sxtb16(tabula_dsp_ror8(v0));
            const int32_t e1 = __sxtb16(v1), o1 = __sxtb16(tabula_dsp_ror8(v1));
            a00 = __smlad(p[1], o0, __smlad(p[0], e0, a00));
            a01 = __smlad(p[3], o0, __smlad(p[2], e0, a01));
            a10 = __smlad(p[1], o1, __smlad(p[0], e1, a10));
            a11 = __smlad(p[3], o1, __smlad(p[2], e1, a11));
        }
#else /* the C twin: the same SMLAD sums, 4 values a step */
        {
            int32_t acc[4];
            TABULA_DSP_PUT4(acc, a00, a01, a10, a11);
            tabula_dsp_conv_block(patch, w0, len, len, acc);
            a00 = acc[0]; a01 = acc[1]; a10 = acc[2]; a11 = acc[3];
        }
        (void)n8; (void)n4;
#endif
        ya[oc] = (int8_t)tabula_dsp_rq8(a00, ms[0], ms[1], zp);
        yb[oc] = (int8_t)tabula_dsp_rq8(a01, ms[0], ms[1], zp);
        ya[oc + 1] = (int8_t)tabula_dsp_rq8(a10, ms[2], ms[3], zp);
        yb[oc + 1] = (int8_t)tabula_dsp_rq8(a11, ms[2], ms[3], zp);
    }
}

/* The whole CONV2D on the DSP path (arguments checked by the caller; weight_zp == 0, kh * kw * c <=
 * TABULA_DSP_PATCH_MAX): acc = bias + sum over the window of (x - zp) w, padded taps (fill - zp) w
 * (tabula_dsp_conv_gather: zp = fill = input_zp for tabula_conv2d_s8, zp 0 and fill = pad_value for
 * tabula_conv2d_s8_folded). */
static inline void tabula_dsp_conv2d_s8(const tabula_window *win, int32_t out_c, const int8_t *input, int32_t zp,
                                        int32_t fill, const int8_t *weight, const int32_t *bias,
                                        const tabula_requant *rq, void *output)
{
    int32_t patch[TABULA_DSP_PATCH_MAX + 8]; /* 2 pixels: 2 words per 4 values each, 1 per tail value */
    int8_t stage[TABULA_DSP_PATCH_MAX];
    const int32_t len = win->kernel_h * win->kernel_w * win->c;
    const int32_t ohw = win->out_h * win->out_w, npix = win->n * ohw;
    const int32_t ge33 = tabula_dsp_epilogue(rq, out_c);
    const int32_t rq8 = ge33 == TABULA_DSP_RQ8 && (out_c & 1) == 0 && (((uint32_t)(uintptr_t)weight | (uint32_t)len) & 3u) == 0;
    const int32_t esize = rq ? 1 : 4; /* bytes per output element */
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
        if (rq8 && two) {
            tabula_dsp_conv_pixels_rq8(patch, weight, len, out_c, bias, rq, (int8_t *)output + p * out_c,
                                       (int8_t *)output + (p + 1) * out_c);
            continue;
        }
        tabula_dsp_conv_pixels(patch, weight, len, out_c, bias, rq, ge33,
                               (int8_t *)output + p * out_c * esize,
                               two ? (void *)((int8_t *)output + (p + 1) * out_c * esize) : 0);
    }
}
#endif /* TABULA_HAVE_DSP */

#endif /* TABULA_CONV2D_DSP_H */
