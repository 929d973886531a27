/*
 * The fast Helium (MVE) path of tabula_conv2d_s16 (a16w8, requantized to int16): 32-bit accumulators
 * where they are provably exact, several output pixels per weight load.  Private to
 * conv2d/tabula_conv2d_impl.h (TABULA_CONV_WIDE), which takes it when requant != NULL, weight_zp == 0 and
 * conv16_fast_ok says the int32 sums are exact; otherwise its 64-bit path (tabula_gemv_s16_mve).
 *
 * Exactness: output o's sum is bias[o] + sum_j x[j] w[o][j] with |x| <= 32768, so |sum| <= |bias[o]| +
 * 32768 sum_j |w[o][j]|.  When that bound is < 2^31 for every channel (checked once per call: first
 * |bias| + 2^22 len, else the channel's weights summed) the int32 sum modulo 2^32 (VMLADAVA.S16: 8 int16
 * x int16 products per instruction into a 32-bit scalar, the int8 weights sign-extended by VLDRB.S16) is
 * the exact int48 value, and tabula_requantize48 of it is what the 64-bit path computes.
 *
 * Pixels: rows x + i xstep (i < n) of len values: the input itself for a 1x1 conv with stride 1 and no
 * padding (xstep = c), else one output row's receptive fields gathered at a time (conv_field16_mve,
 * padded taps 0: int16 is symmetric) into TABULA_CONV16_PATCH values.  Per block of 4 pixels and per
 * output channel: the channel's weight vector loaded once for the 4 pixels (conv16_dot4: 1 VLDRB.S16 + 4
 * VLDRH + 4 VMLADAVA per 32 MACs; a tail-predicated low-overhead loop in assembly, its C twin one define
 * away), the 4 sums as one vector (lane = pixel), + bias, then requantized in the vector when every shift
 * is in [17, 46] (tabula_requant4_s16_mve's arithmetic with the channel's multiplier and shift in every
 * lane: VMULH by m 2^16, VRSHL by 16 - s, + zp, the clamp) and stored to the 4 pixels' outputs by one
 * scatter (VSTRH.32, element offsets i out_c); other shifts, per output by tabula_requantize48.  A block
 * of 1-3 pixels aliases the missing rows to its last real one (their sums are not stored).
 */
#ifndef TABULA_CONV2D_S16_MVE_H
#define TABULA_CONV2D_S16_MVE_H

#include "tabula_mve.h"

#if TABULA_HAVE_MVE

#define TABULA_CONV16_PATCH 1024 /* int16 values of gathered receptive fields (2 KiB of stack) */

/* 1 when every output channel's sum is provably within int32 (the bound above). */
static inline int conv16_fits32(const int8_t *w, int32_t len, int32_t out_c, const int64_t *bias)
{
    const int64_t lim = (int64_t)1 << 31;
    int32_t o, j;
    for (o = 0; o < out_c; ++o) {
        const int64_t b = bias ? bias[o] : 0;
        const int64_t ab = b < 0 ? -b : b;
        int32_t sw = 0;
        if (b <= -lim || b >= lim) {
            return 0;
        }
        if (ab + ((int64_t)len << 22) < lim) { /* |w| <= 128 */
            continue;
        }
        for (j = 0; j < len; j += 8) {
            const mve_pred16_t p = vctp16q((uint32_t)(len - j));
            sw = vaddvaq_s16(sw, vabsq_s16(vldrbq_z_s16(w + o * len + j, p)));
        }
        if (ab + ((int64_t)sw << 15) >= lim) {
            return 0;
        }
    }
    return 1;
}

/* Output channels per tile of conv16_rows_mve's channel table (32 bytes each, 2 KiB of stack). */
#define TABULA_CONV16_TILE 64
/* The longest row (kh*kw*c) the path takes: 4 pixels' rows interleaved in 4 KiB of stack. */
#define TABULA_CONV16_LEN_MAX 512

/* One output channel of a tile, as the assembly reads it: the multiplier 2^16 m in 4 lanes (VMULH), the
 * bias (exact in int32), the weight row, the VRSHL shift 16 - s.  A last entry with w == NULL ends it. */
typedef struct {
    int32_t m16[4];
    int32_t bias;
    const int8_t *w;
    int32_t sh;
    int32_t pad;
} conv16_ch;

/* The 4-pixel requantization after the dot products: the sums (lane = pixel) + bias already, VMULH by
 * 2^16 m, VRSHL by 16 - s (tabula_requant4_s16_mve's proof: bit-exact for s in [17, 46]), + zp, the clamp,
 * and the scatter store of lane k to po + k out_c (element offsets in offs). */
#if TABULA_USE_ASM
/*
 * Per channel of the tile: the 4 accumulators start at the bias, one tail-predicated low-overhead loop
 * (DLSTP.16 / LETP; per 8 values: VLDRB.S16 of the weights + 4 x (VLDRH of a pixel's 8 values from the
 * interleaved block, VMLADAVA)), the 4 sums moved into q3 (VMOV Qd[2], Qd[0], Rt, Rt2: lane 0 = Rt, lane
 * 2 = Rt2), the requantization above and VSTRH.32 scatter; the next entry's bias and weights loaded
 * before the test for the end (w == NULL).
 */
static inline void conv16_block4(const int16_t *xi, int32_t len, const conv16_ch *pt, int32_t zp, int32x4_t lo,
                                 int32x4_t hi, uint32x4_t offs, int16_t *po)
{
    int32_t a0, a1, a2, a3;
    const int16_t *px;
    const int8_t *w;
    __asm__ volatile("ldrd %[a0], %[w], [%[pt], #16]\n"
                     "2:\n\t"
                     "mov %[a1], %[a0]\n\t"
                     "mov %[a2], %[a0]\n\t"
                     "mov %[a3], %[a0]\n\t"
                     "mov %[px], %[xi]\n\t"
                     "dlstp.16 lr, %[len]\n"
                     "1:\n\t"
                     "vldrb.s16 q0, [%[w]], #8\n\t"
                     "vldrh.u16 q1, [%[px]], #16\n\t"
                     "vmladava.s16 %[a0], q1, q0\n\t"
                     "vldrh.u16 q2, [%[px]], #16\n\t"
                     "vmladava.s16 %[a1], q2, q0\n\t"
                     "vldrh.u16 q1, [%[px]], #16\n\t"
                     "vmladava.s16 %[a2], q1, q0\n\t"
                     "vldrh.u16 q2, [%[px]], #16\n\t"
                     "vmladava.s16 %[a3], q2, q0\n\t"
                     "letp lr, 1b\n\t"
                     "vmov q3[2], q3[0], %[a0], %[a2]\n\t"
                     "vmov q3[3], q3[1], %[a1], %[a3]\n\t"
                     "vldrw.u32 q4, [%[pt]]\n\t"
                     "vmulh.s32 q3, q3, q4\n\t"
                     "ldr %[a0], [%[pt], #24]\n\t"
                     "vrshl.s32 q3, %[a0]\n\t"
                     "vadd.i32 q3, q3, %[zp]\n\t"
                     "vmax.s32 q3, q3, %q[lo]\n\t"
                     "vmin.s32 q3, q3, %q[hi]\n\t"
                     "vstrh.32 q3, [%[po], %q[offs], uxtw #1]\n\t"
                     "adds %[po], %[po], #2\n\t"
                     "ldrd %[a0], %[w], [%[pt], #48]\n\t"
                     "adds %[pt], %[pt], #32\n\t"
                     "cmp %[w], #0\n\t"
                     "bne 2b\n"
                     : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [px] "=&r"(px), [w] "=&l"(w),
                       [pt] "+r"(pt), [po] "+r"(po)
                     : [xi] "r"(xi), [len] "r"(len), [zp] "r"(zp), [lo] "w"(lo), [hi] "w"(hi), [offs] "w"(offs)
                     : "lr", "q0", "q1", "q2", "q3", "q4", "memory", "cc");
}

/* One pixel (row x) against the tile: per channel a tail-predicated loop (VLDRB.S16, VLDRH, VMLADAVA per
 * 8 values) from the bias, the requantization above in lane 0, VSTRH.32 of that lane (predicated). */
static inline void conv16_pixel1(const int16_t *x, int32_t len, const conv16_ch *pt, int32_t zp, int32x4_t lo,
                                 int32x4_t hi, int16_t *po)
{
    int32_t a0;
    const int16_t *px;
    const int8_t *w;
    __asm__ volatile("ldrd %[a0], %[w], [%[pt], #16]\n"
                     "2:\n\t"
                     "mov %[px], %[x]\n\t"
                     "dlstp.16 lr, %[len]\n"
                     "1:\n\t"
                     "vldrb.s16 q0, [%[w]], #8\n\t"
                     "vldrh.u16 q1, [%[px]], #16\n\t"
                     "vmladava.s16 %[a0], q1, q0\n\t"
                     "letp lr, 1b\n\t"
                     "vdup.32 q3, %[a0]\n\t"
                     "vldrw.u32 q4, [%[pt]]\n\t"
                     "vmulh.s32 q3, q3, q4\n\t"
                     "ldr %[a0], [%[pt], #24]\n\t"
                     "vrshl.s32 q3, %[a0]\n\t"
                     "vadd.i32 q3, q3, %[zp]\n\t"
                     "vmax.s32 q3, q3, %q[lo]\n\t"
                     "vmin.s32 q3, q3, %q[hi]\n\t"
                     "vmov.32 %[a0], q3[0]\n\t"
                     "strh %[a0], [%[po]], #2\n\t"
                     "ldrd %[a0], %[w], [%[pt], #48]\n\t"
                     "adds %[pt], %[pt], #32\n\t"
                     "cmp %[w], #0\n\t"
                     "bne 2b\n"
                     : [a0] "=&Te"(a0), [px] "=&r"(px), [w] "=&l"(w), [pt] "+r"(pt), [po] "+r"(po)
                     : [x] "r"(x), [len] "r"(len), [zp] "r"(zp), [lo] "w"(lo), [hi] "w"(hi)
                     : "lr", "q0", "q1", "q3", "q4", "memory", "cc");
}
#else
/* The C twins of the two assembly loops: the same sums, the same requantization. */
static inline int32x4_t conv16_requant_c(int32x4_t v, const conv16_ch *ch, int32_t zp, int32x4_t lo, int32x4_t hi)
{
    v = vrshlq_s32(vmulhq_s32(v, vldrwq_s32(ch->m16)), vdupq_n_s32(ch->sh));
    return vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), lo), hi);
}

static inline void conv16_block4(const int16_t *xi, int32_t len, const conv16_ch *pt, int32_t zp, int32x4_t lo,
                                 int32x4_t hi, uint32x4_t offs, int16_t *po)
{
    for (; pt->w; ++pt, ++po) {
        int32_t a0 = pt->bias, a1 = pt->bias, a2 = pt->bias, a3 = pt->bias, j;
        const int16_t *px = xi;
        int32x4_t v = vdupq_n_s32(0);
        for (j = 0; j < len; j += 8, px += 32) {
            const mve_pred16_t p = vctp16q((uint32_t)(len - j));
            const int16x8_t wv = vldrbq_z_s16(pt->w + j, p);
            a0 = vmladavaq_p_s16(a0, vldrhq_s16(px), wv, p);
            a1 = vmladavaq_p_s16(a1, vldrhq_s16(px + 8), wv, p);
            a2 = vmladavaq_p_s16(a2, vldrhq_s16(px + 16), wv, p);
            a3 = vmladavaq_p_s16(a3, vldrhq_s16(px + 24), wv, p);
        }
        v = vsetq_lane_s32(a0, v, 0);
        v = vsetq_lane_s32(a1, v, 1);
        v = vsetq_lane_s32(a2, v, 2);
        v = vsetq_lane_s32(a3, v, 3);
        vstrhq_scatter_shifted_offset_s32(po, offs, conv16_requant_c(v, pt, zp, lo, hi));
    }
}

static inline void conv16_pixel1(const int16_t *x, int32_t len, const conv16_ch *pt, int32_t zp, int32x4_t lo,
                                 int32x4_t hi, int16_t *po)
{
    for (; pt->w; ++pt, ++po) {
        int32_t a0 = pt->bias, j;
        for (j = 0; j < len; j += 8) {
            const mve_pred16_t p = vctp16q((uint32_t)(len - j));
            a0 = vmladavaq_p_s16(a0, vldrhq_z_s16(x + j, p), vldrbq_z_s16(pt->w + j, p), p);
        }
        *po = (int16_t)vgetq_lane_s32(conv16_requant_c(vdupq_n_s32(a0), pt, zp, lo, hi), 0);
    }
}
#endif

/*
 * n pixels (rows x + i xstep, len values each) against the out_c weight rows (w + o len), requantized to
 * int16 at out + i out_c + o; every shift in [17, 46] and conv16_fits32 (the caller's checks).  Per tile
 * of TABULA_CONV16_TILE channels: the channel table, then per 4 pixels their rows interleaved per 8
 * values (xi[32 v + 8 k + e] = row k's value 8 v + e, zero past len) and conv16_block4; the last 1-3
 * pixels one at a time (conv16_pixel1).
 */
static __attribute__((noinline)) void conv16_rows_mve(const int16_t *x, int32_t xstep, int32_t n, int32_t len,
                                                      const int8_t *w, int32_t out_c, const int64_t *bias,
                                                      const tabula_requant *rq, int16_t *out)
{
    conv16_ch tab[TABULA_CONV16_TILE + 1];
    int16_t xi[4 * TABULA_CONV16_LEN_MAX];
    const int32_t zp = rq->output_zp;
    const int32x4_t lo = vdupq_n_s32(rq->out_min), hi = vdupq_n_s32(rq->out_max);
    const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)out_c); /* 0, out_c, 2 out_c, 3 out_c */
    int32_t t, o, i, k, v;
    for (t = 0; t < out_c; t += TABULA_CONV16_TILE) {
        const int32_t nt = out_c - t < TABULA_CONV16_TILE ? out_c - t : TABULA_CONV16_TILE;
        for (o = 0; o < nt; ++o) {
            vstrwq_s32(tab[o].m16, vdupq_n_s32(tabula_requant_m(rq, t + o) << 16));
            tab[o].bias = bias ? (int32_t)bias[t + o] : 0; /* within int32: conv16_fits32 */
            tab[o].w = w + (t + o) * len;
            tab[o].sh = 16 - tabula_requant_s(rq, t + o);
        }
        tab[nt].bias = 0;
        tab[nt].w = 0;
        for (i = 0; i + 4 <= n; i += 4) {
            const int16_t *xr = x + i * xstep;
            for (v = 0; v < len; v += 8) {
                const mve_pred16_t p = vctp16q((uint32_t)(len - v));
                for (k = 0; k < 4; ++k) {
                    vstrhq_s16(xi + 4 * v + 8 * k, vldrhq_z_s16(xr + k * xstep + v, p));
                }
            }
            conv16_block4(xi, len, tab, zp, lo, hi, offs, out + i * out_c + t);
        }
        for (; i < n; ++i) {
            conv16_pixel1(x + i * xstep, len, tab, zp, lo, hi, out + i * out_c + t);
        }
    }
}

/* The path applies: a requant block, symmetric weights, every sum provably within int32, and the fields
 * either the input's rows (1x1, stride 1, no padding) or at least 4 of them fit TABULA_CONV16_PATCH. */
static inline int conv16_fast_ok(const tabula_window *win, int32_t out_c, const int8_t *weight, int32_t weight_zp,
                                 const int64_t *bias, const tabula_requant *requant)
{
    const int32_t len = win->kernel_h * win->kernel_w * win->c;
    const int rows = win->kernel_h == 1 && win->kernel_w == 1 && win->stride_y == 1 && win->stride_x == 1
                     && win->pad_top == 0 && win->pad_left == 0 && win->out_h == win->h && win->out_w == win->w;
    return requant != 0 && weight_zp == 0 && len <= TABULA_CONV16_LEN_MAX && (rows || 4 * len <= TABULA_CONV16_PATCH)
           && tabula_requant_s16_vec_ok(requant, out_c) && conv16_fits32(weight, len, out_c, bias);
}

/* The fast path (conv16_fast_ok holds): the input rows themselves, or per output row up to
 * TABULA_CONV16_PATCH values of receptive fields gathered at a time. */
static __attribute__((noinline)) void conv16_fast_mve(const tabula_window *win, int32_t out_c, const int16_t *input,
                                                      const int8_t *weight, const int64_t *bias,
                                                      const tabula_requant *requant, int16_t *output)
{
    const int32_t len = win->kernel_h * win->kernel_w * win->c, chunk = TABULA_CONV16_PATCH / len;
    int16_t patch[TABULA_CONV16_PATCH];
    int32_t b, oy, ox, i;
    if (win->kernel_h == 1 && win->kernel_w == 1 && win->stride_y == 1 && win->stride_x == 1 && win->pad_top == 0
        && win->pad_left == 0 && win->out_h == win->h && win->out_w == win->w) {
        conv16_rows_mve(input, len, win->n * win->h * win->w, len, weight, out_c, bias, requant, output);
        return;
    }
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            for (ox = 0; ox < win->out_w; ox += chunk) {
                const int32_t nx = win->out_w - ox < chunk ? win->out_w - ox : chunk;
                for (i = 0; i < nx; ++i) {
                    int16_t *dst = patch + i * len;
                    const int16_t *f = conv_field16_mve(win, input, b, iy0, (ox + i) * win->stride_x - win->pad_left, dst);
                    if (f != dst) { /* a 1xk window inside the input: its row */
                        tabula_copy_s8_mve((int8_t *)dst, (const int8_t *)f, 2 * len);
                    }
                }
                conv16_rows_mve(patch, len, nx, len, weight, out_c, bias, requant,
                                output + ((b * win->out_h + oy) * win->out_w + ox) * out_c);
            }
        }
    }
}
#endif /* TABULA_HAVE_MVE */

#endif /* TABULA_CONV2D_S16_MVE_H */
