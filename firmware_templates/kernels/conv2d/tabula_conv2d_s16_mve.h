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
 * padded taps 0: int16 is symmetric) into TABULA_CONV16_PATCH values.  Per tile of 64 output channels a
 * table (bias, weight row, 2^16 m, 16 - s per channel and per channel pair), then per 2 pixels their rows
 * interleaved per 8 values and, per pair of channels, conv16_block22: per 8 values 2 VLDRH + 2 VLDRB.S16
 * + 4 VMLADAVA (16 MACs per 4 loads; the int8 weights sign-extended to int16), from the biases; a
 * low-overhead loop in assembly (its C twin one define away, -DTABULA_NO_ASM=1).  The 4 sums are one
 * vector (pixel 0 channel o, o+1, pixel 1 o, o+1), requantized in it with tabula_requant4_s16_mve's
 * arithmetic (every shift in [17, 46]: VMULH by 2^16 m, VRSHL by 16 - s, the clamp; output zero point 0)
 * and stored by one VSTRH.32 scatter.  An odd last pixel: conv16_pixel2 (1 pixel x 2 channels per pass),
 * an odd last channel: conv16_pixel1 (one dot product per pixel); the same requantization.
 *
 * Measured (tabula.harness.device, QEMU mps3-an547 -icount, benchmarks/layers.py, instructions per call,
 * 64-bit path -> this one): MobileNetV1-0.25 96x96's first conv 1->8 3x3/2 1,002,219 -> 539,562, pointwise
 * 8->16 48x48 1,234,312 -> 322,156, 64->64 12x12 434,094 -> 215,219, 256->256 3x3 273,938 -> 205,562 (int8,
 * tabula_conv2d_s8_folded: 299,094, 213,031, 114,125, 110,812).
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
/* The longest row (kh*kw*c) the path takes: 2 pixels' rows interleaved in 2 KiB of stack. */
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

/* One block of 2 output channels, as the assembly reads it: the multipliers 2^16 m (VMULH) and VRSHL
 * shifts 16 - s per lane (lanes: pixel 0 channel o, pixel 0 o+1, pixel 1 o, pixel 1 o+1), the 2 biases
 * (exact in int32) and weight rows.  A last entry with w0 == NULL ends a tile. */
typedef struct {
    int32_t m16[4], sh[4];
    int32_t bias0, bias1;
    const int8_t *w0, *w1;
} conv16_pair;

/* The stores of the output type (TABULA_CONV_OUT_T: int16, or int8 at the precision boundary _s16_s8, where
 * the zero point may be nonzero and the clamp bounds are within int8, so a lane's low byte is its value). */
#if TABULA_CONV_CROSS
#define TABULA_CONV16_ADD_ZP "vadd.i32 q3, q3, %[zp]\n\t"
#define TABULA_CONV16_STORE4 "vstrb.32 q3, [%[po], %q[offs]]\n\t" "adds %[po], %[po], #2\n\t"
#define TABULA_CONV16_STORE1 "strb %[a0], [%[po]], #1\n\t"
#define TABULA_CONV16_STORE2 "strb %[a0], [%[po]]\n\t" "strb %[a1], [%[po], #1]\n\t" "adds %[po], %[po], #2\n\t"
#else
#define TABULA_CONV16_ADD_ZP ""
#define TABULA_CONV16_STORE4 "vstrh.32 q3, [%[po], %q[offs], uxtw #1]\n\t" "adds %[po], %[po], #4\n\t"
#define TABULA_CONV16_STORE1 "strh %[a0], [%[po]], #2\n\t"
#define TABULA_CONV16_STORE2 "strh %[a0], [%[po]]\n\t" "strh %[a1], [%[po], #2]\n\t" "adds %[po], %[po], #4\n\t"
#endif

#if TABULA_USE_ASM
/* The 2 x 2 block's epilogue and the step to the next entry: the 4 sums into q3 (VMOV Qd[2], Qd[0], Rt,
 * Rt2: lane 0 = Rt, lane 2 = Rt2), VMULH by 2^16 m, VRSHL by 16 - s (tabula_requant4_s16_mve's proof:
 * bit-exact for s in [17, 46]), + zp (int8 only: int16's is 0), the clamp, the VSTRH.32 (VSTRB.32) scatter
 * to po + {0, 1, out_c, out_c + 1},
 * then the next entry's biases and weight rows, loaded before the test for the end. */
#define TABULA_CONV16_PAIR_TAIL                                                                     \
    "vmov q3[2], q3[0], %[a0], %[a2]\n\t"                                                          \
    "vmov q3[3], q3[1], %[a1], %[a3]\n\t"                                                          \
    "vldrw.u32 q4, [%[pt]]\n\t"                                                                    \
    "vmulh.s32 q3, q3, q4\n\t"                                                                     \
    "vldrw.u32 q4, [%[pt], #16]\n\t"                                                               \
    "vrshl.s32 q3, q3, q4\n\t" TABULA_CONV16_ADD_ZP                                                \
    "vmax.s32 q3, q3, %q[lo]\n\t"                                                                  \
    "vmin.s32 q3, q3, %q[hi]\n\t" TABULA_CONV16_STORE4                                             \
    "ldrd %[a0], %[a1], [%[pt], #80]\n\t"                                                          \
    "ldrd %[w0], %[w1], [%[pt], #88]\n\t"                                                          \
    "adds %[pt], %[pt], #48\n\t"                                                                   \
    "cmp %[w0], #0\n\t"                                                                            \
    "bne 2b\n"
/* 8 values of both pixels (x: pixel 0's, then pixel 1's, interleaved) against both weight rows. */
#define TABULA_CONV16_PAIR_STEP                                                                     \
    "vldrh.u16 q1, [%[px]], #16\n\t"                                                               \
    "vldrb.s16 q0, [%[w0]], #8\n\t"                                                                \
    "vmladava.s16 %[a0], q1, q0\n\t"                                                               \
    "vldrh.u16 q2, [%[px]], #16\n\t"                                                               \
    "vmladava.s16 %[a2], q2, q0\n\t"                                                               \
    "vldrb.s16 q0, [%[w1]], #8\n\t"                                                                \
    "vmladava.s16 %[a1], q1, q0\n\t"                                                               \
    "vmladava.s16 %[a3], q2, q0\n\t"
#define TABULA_CONV16_PAIR_ASM(LOOP_START, BODY, LOOP_END)                                          \
    __asm__ volatile("ldrd %[a0], %[a1], [%[pt], #32]\n\t"                                        \
                     "ldrd %[w0], %[w1], [%[pt], #40]\n"                                           \
                     "2:\n\t"                                                                      \
                     "mov %[a2], %[a0]\n\t"                                                        \
                     "mov %[a3], %[a1]\n\t"                                                        \
                     "mov %[px], %[xi]\n\t" LOOP_START "1:\n\t" BODY LOOP_END TABULA_CONV16_PAIR_TAIL \
                     : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [px] "=&r"(px),  \
                       [w0] "=&l"(w0), [w1] "=&l"(w1), [pt] "+r"(pt), [po] "+r"(po)                       \
                     : [xi] "r"(xi), [cnt] "r"(cnt), [zp] "r"(zp), [lo] "w"(lo), [hi] "w"(hi),            \
                       [offs] "w"(offs)                                                                   \
                     : "lr", "q0", "q1", "q2", "q3", "q4", "memory", "cc")

/*
 * Two pixels (xi: their rows interleaved per 8 values, zero past len) against every channel pair of the
 * tile (pt, ended by w0 == NULL), requantized to po + {0, 1, out_c, out_c + 1} per pair.  Per pair: the
 * accumulators start at the biases, then per 8 values 2 VLDRH (the pixels) + 2 VLDRB.S16 (the rows) + 4
 * VMLADAVA: len a multiple of 16, a low-overhead loop of len / 16 passes of 16 values (DLS / LE), else a
 * tail-predicated one (DLSTP.16 / LETP, the last 1-7 lanes predicated by the loop).
 */
static inline void conv16_block22(const int16_t *xi, int32_t len, const conv16_pair *pt, int32_t zp, int32x4_t lo,
                                  int32x4_t hi, uint32x4_t offs, TABULA_CONV_OUT_T *po)
{
    int32_t a0, a1, a2, a3;
    const int16_t *px;
    const int8_t *w0, *w1;
    const int32_t cnt = len % 16 == 0 ? len / 16 : len;
    if (len % 16 == 0) {
        TABULA_CONV16_PAIR_ASM("dls lr, %[cnt]\n", TABULA_CONV16_PAIR_STEP TABULA_CONV16_PAIR_STEP, "le lr, 1b\n\t");
    } else {
        TABULA_CONV16_PAIR_ASM("dlstp.16 lr, %[cnt]\n", TABULA_CONV16_PAIR_STEP, "letp lr, 1b\n\t");
    }
}

/* One pixel (row x) against the channel pairs of the table pt (ended by w0 == NULL): per pair a
 * tail-predicated loop (per 8 values VLDRH + 2 x (VLDRB.S16, VMLADAVA)) from the biases, the sums in lanes
 * (0, 1) and again (2, 3), conv16_block22's requantization, lanes 0 and 1 moved out and stored. */
static __attribute__((noinline)) void conv16_pixel2(const int16_t *x, int32_t len, const conv16_pair *pt, int32_t zp,
                                                    int32x4_t lo, int32x4_t hi, TABULA_CONV_OUT_T *po)
{
    int32_t a0, a1;
    const int16_t *px;
    const int8_t *w0, *w1;
    __asm__ volatile("ldrd %[a0], %[a1], [%[pt], #32]\n\t"
                     "ldrd %[w0], %[w1], [%[pt], #40]\n"
                     "2:\n\t"
                     "mov %[px], %[x]\n\t"
                     "dlstp.16 lr, %[len]\n"
                     "1:\n\t"
                     "vldrh.u16 q1, [%[px]], #16\n\t"
                     "vldrb.s16 q0, [%[w0]], #8\n\t"
                     "vmladava.s16 %[a0], q1, q0\n\t"
                     "vldrb.s16 q0, [%[w1]], #8\n\t"
                     "vmladava.s16 %[a1], q1, q0\n\t"
                     "letp lr, 1b\n\t"
                     "vmov q3[2], q3[0], %[a0], %[a0]\n\t"
                     "vmov q3[3], q3[1], %[a1], %[a1]\n\t"
                     "vldrw.u32 q4, [%[pt]]\n\t"
                     "vmulh.s32 q3, q3, q4\n\t"
                     "vldrw.u32 q4, [%[pt], #16]\n\t"
                     "vrshl.s32 q3, q3, q4\n\t" TABULA_CONV16_ADD_ZP
                     "vmax.s32 q3, q3, %q[lo]\n\t"
                     "vmin.s32 q3, q3, %q[hi]\n\t"
                     "vmov.32 %[a0], q3[0]\n\t"
                     "vmov.32 %[a1], q3[1]\n\t" TABULA_CONV16_STORE2
                     "ldrd %[a0], %[a1], [%[pt], #80]\n\t"
                     "ldrd %[w0], %[w1], [%[pt], #88]\n\t"
                     "adds %[pt], %[pt], #48\n\t"
                     "cmp %[w0], #0\n\t"
                     "bne 2b\n"
                     : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [px] "=&r"(px), [w0] "=&l"(w0), [w1] "=&l"(w1), [pt] "+r"(pt),
                       [po] "+r"(po)
                     : [x] "r"(x), [len] "r"(len), [zp] "r"(zp), [lo] "w"(lo), [hi] "w"(hi)
                     : "lr", "q0", "q1", "q3", "q4", "memory", "cc");
}

/* One pixel (row x) against the channels of the table pt (ended by w == NULL): per channel a tail-predicated
 * loop (VLDRB.S16, VLDRH, VMLADAVA per 8 values) from the bias, the requantization of conv16_block22 in
 * lane 0 (the shift by VRSHL of a register), STRH of that lane. */
static __attribute__((noinline)) void conv16_pixel1(const int16_t *x, int32_t len, const conv16_ch *pt, int32_t zp,
                                                    int32x4_t lo, int32x4_t hi, TABULA_CONV_OUT_T *po)
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
                     "vmov.32 %[a0], q3[0]\n\t" TABULA_CONV16_STORE1
                     "ldrd %[a0], %[w], [%[pt], #48]\n\t"
                     "adds %[pt], %[pt], #32\n\t"
                     "cmp %[w], #0\n\t"
                     "bne 2b\n"
                     : [a0] "=&Te"(a0), [px] "=&r"(px), [w] "=&l"(w), [pt] "+r"(pt), [po] "+r"(po)
                     : [x] "r"(x), [len] "r"(len), [zp] "r"(zp), [lo] "w"(lo), [hi] "w"(hi)
                     : "lr", "q0", "q1", "q3", "q4", "memory", "cc");
}
#else
/* The C twins of the assembly loops (-DTABULA_NO_ASM=1): the same sums, the same requantization. */
static inline int32x4_t conv16_requant_c(int32x4_t v, const conv16_ch *ch, int32_t zp, int32x4_t lo, int32x4_t hi)
{
    v = vrshlq_s32(vmulhq_s32(v, vldrwq_s32(ch->m16)), vdupq_n_s32(ch->sh));
    return vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), lo), hi);
}

static inline void conv16_block22(const int16_t *xi, int32_t len, const conv16_pair *pt, int32_t zp, int32x4_t lo,
                                  int32x4_t hi, uint32x4_t offs, TABULA_CONV_OUT_T *po)
{
    for (; pt->w0; ++pt, po += 2) {
        int32_t a0 = pt->bias0, a1 = pt->bias1, a2 = pt->bias0, a3 = pt->bias1, j;
        const int16_t *px = xi;
        int32x4_t v = vdupq_n_s32(0);
        for (j = 0; j < len; j += 8, px += 16) {
            const mve_pred16_t p = vctp16q((uint32_t)(len - j));
            const int16x8_t x0 = vldrhq_s16(px), x1 = vldrhq_s16(px + 8);
            const int16x8_t v0 = vldrbq_z_s16(pt->w0 + j, p), v1 = vldrbq_z_s16(pt->w1 + j, p);
            a0 = vmladavaq_p_s16(a0, x0, v0, p);
            a2 = vmladavaq_p_s16(a2, x1, v0, p);
            a1 = vmladavaq_p_s16(a1, x0, v1, p);
            a3 = vmladavaq_p_s16(a3, x1, v1, p);
        }
        v = vsetq_lane_s32(a0, v, 0);
        v = vsetq_lane_s32(a1, v, 1);
        v = vsetq_lane_s32(a2, v, 2);
        v = vsetq_lane_s32(a3, v, 3);
        v = vrshlq_s32(vmulhq_s32(v, vldrwq_s32(pt->m16)), vldrwq_s32(pt->sh));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), lo), hi);
#if TABULA_CONV_CROSS
        vstrbq_scatter_offset_s32(po, offs, v);
#else
        vstrhq_scatter_shifted_offset_s32(po, offs, v);
#endif
    }
}

static __attribute__((noinline)) void conv16_pixel2(const int16_t *x, int32_t len, const conv16_pair *pt, int32_t zp,
                                                    int32x4_t lo, int32x4_t hi, TABULA_CONV_OUT_T *po)
{
    for (; pt->w0; ++pt, po += 2) {
        int32_t a0 = pt->bias0, a1 = pt->bias1, j;
        int32x4_t v = vdupq_n_s32(0);
        for (j = 0; j < len; j += 8) {
            const mve_pred16_t p = vctp16q((uint32_t)(len - j));
            const int16x8_t xv = vldrhq_z_s16(x + j, p);
            a0 = vmladavaq_p_s16(a0, xv, vldrbq_z_s16(pt->w0 + j, p), p);
            a1 = vmladavaq_p_s16(a1, xv, vldrbq_z_s16(pt->w1 + j, p), p);
        }
        v = vsetq_lane_s32(a0, v, 0);
        v = vsetq_lane_s32(a1, v, 1);
        v = vrshlq_s32(vmulhq_s32(v, vldrwq_s32(pt->m16)), vldrwq_s32(pt->sh));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), lo), hi);
        po[0] = (TABULA_CONV_OUT_T)vgetq_lane_s32(v, 0);
        po[1] = (TABULA_CONV_OUT_T)vgetq_lane_s32(v, 1);
    }
}

static __attribute__((noinline)) void conv16_pixel1(const int16_t *x, int32_t len, const conv16_ch *pt, int32_t zp,
                                                    int32x4_t lo, int32x4_t hi, TABULA_CONV_OUT_T *po)
{
    for (; pt->w; ++pt, ++po) {
        int32_t a0 = pt->bias, j;
        for (j = 0; j < len; j += 8) {
            const mve_pred16_t p = vctp16q((uint32_t)(len - j));
            a0 = vmladavaq_p_s16(a0, vldrhq_z_s16(x + j, p), vldrbq_z_s16(pt->w + j, p), p);
        }
        *po = (TABULA_CONV_OUT_T)vgetq_lane_s32(conv16_requant_c(vdupq_n_s32(a0), pt, zp, lo, hi), 0);
    }
}
#endif

/*
 * n pixels (rows x + i xstep, len values each) against the out_c weight rows (w + o len), requantized to
 * int16 at out + i out_c + o; every shift in [17, 46] and conv16_fits32 (the caller's checks).  Per tile
 * of TABULA_CONV16_TILE channels: the pair and channel tables, then per 2 pixels their rows interleaved
 * per 8 values (xi[16 v + 8 k + e] = pixel k's value 8 v + e, zero past len) and conv16_block22 over
 * the channel pairs; an odd last pixel against the pairs (conv16_pixel2), an odd last channel (or a tile of
 * one) one pixel at a time (conv16_pixel1).
 */
static __attribute__((noinline)) void conv16_rows_mve(const int16_t *x, int32_t xstep, int32_t n, int32_t len,
                                                      const int8_t *w, int32_t out_c, const int64_t *bias,
                                                      const tabula_requant *rq, TABULA_CONV_OUT_T *out)
{
    conv16_ch tab[TABULA_CONV16_TILE + 1];
    conv16_pair pairs[TABULA_CONV16_TILE / 2 + 1];
    int16_t xi[2 * TABULA_CONV16_LEN_MAX];
    const int32_t zp = rq->output_zp;
    const int32x4_t lo = vdupq_n_s32(rq->out_min), hi = vdupq_n_s32(rq->out_max);
    const uint32x4_t offs = vaddq_u32(vandq_u32(vidupq_n_u32(0u, 1), vdupq_n_u32(1u)), /* 0, 1, out_c, out_c + 1 */
                                      vmulq_n_u32(vshrq_n_u32(vidupq_n_u32(0u, 1), 1), (uint32_t)out_c));
    int32_t t, o, i, k, v;
    for (t = 0; t < out_c; t += TABULA_CONV16_TILE) {
        const int32_t nt = out_c - t < TABULA_CONV16_TILE ? out_c - t : TABULA_CONV16_TILE, ne = nt & ~1;
        for (o = 0; o < nt; ++o) {
            vstrwq_s32(tab[o].m16, vdupq_n_s32(tabula_requant_m(rq, t + o) << 16));
            tab[o].bias = bias ? (int32_t)bias[t + o] : 0; /* within int32: conv16_fits32 */
            tab[o].w = w + (t + o) * len;
            tab[o].sh = 16 - tabula_requant_s(rq, t + o);
            tab[o].pad = 0;
        }
        tab[nt].bias = 0;
        tab[nt].w = 0;
        for (o = 0; o < ne; o += 2) {
            conv16_pair *pr = &pairs[o / 2];
            for (k = 0; k < 4; ++k) {
                pr->m16[k] = tab[o + (k & 1)].m16[0];
                pr->sh[k] = tab[o + (k & 1)].sh;
            }
            pr->bias0 = tab[o].bias;
            pr->bias1 = tab[o + 1].bias;
            pr->w0 = tab[o].w;
            pr->w1 = tab[o + 1].w;
        }
        pairs[ne / 2].bias0 = pairs[ne / 2].bias1 = 0;
        pairs[ne / 2].w0 = pairs[ne / 2].w1 = 0;
        for (i = 0; ne > 0 && i + 2 <= n; i += 2) {
            const int16_t *xr = x + i * xstep;
            for (v = 0; v + 8 <= len; v += 8) {
                vstrhq_s16(xi + 2 * v, vldrhq_s16(xr + v));
                vstrhq_s16(xi + 2 * v + 8, vldrhq_s16(xr + xstep + v));
            }
            if (v < len) { /* the last 1-7 values, zeros after them */
                const mve_pred16_t p = vctp16q((uint32_t)(len - v));
                vstrhq_s16(xi + 2 * v, vldrhq_z_s16(xr + v, p));
                vstrhq_s16(xi + 2 * v + 8, vldrhq_z_s16(xr + xstep + v, p));
            }
            conv16_block22(xi, len, pairs, zp, lo, hi, offs, out + i * out_c + t);
        }
        if (i < n && ne > 0) { /* an odd last pixel: the channel pairs, then an odd last channel below */
            conv16_pixel2(x + i * xstep, len, pairs, zp, lo, hi, out + i * out_c + t);
            ++i;
        }
        for (; i < n; ++i) { /* a tile of 1 channel: every pixel */
            conv16_pixel1(x + i * xstep, len, tab, zp, lo, hi, out + i * out_c + t);
        }
        for (i = 0; ne > 0 && ne < nt && i < n; ++i) { /* an odd last channel, every pixel */
            conv16_pixel1(x + i * xstep, len, tab + ne, zp, lo, hi, out + i * out_c + t + ne);
        }
    }
}

/* The path applies: a requant block (its output zero point 0 for int16 outputs: TOSA's are; any for int8)
 * with every shift in [17, 46], symmetric weights, every sum provably within int32, rows of at most
 * TABULA_CONV16_LEN_MAX values, and the fields either the input's rows (1x1, stride 1, no padding) or at
 * least 4 of them fitting TABULA_CONV16_PATCH. */
static inline int conv16_fast_ok(const tabula_window *win, int32_t out_c, const int8_t *weight, int32_t weight_zp,
                                 const int64_t *bias, const tabula_requant *requant)
{
    const int32_t len = win->kernel_h * win->kernel_w * win->c;
    const int rows = win->kernel_h == 1 && win->kernel_w == 1 && win->stride_y == 1 && win->stride_x == 1
                     && win->pad_top == 0 && win->pad_left == 0 && win->out_h == win->h && win->out_w == win->w;
    return requant != 0 && (TABULA_CONV_CROSS || requant->output_zp == 0) && weight_zp == 0
           && len <= TABULA_CONV16_LEN_MAX && (rows || 4 * len <= TABULA_CONV16_PATCH)
           && tabula_requant_s16_vec_ok(requant, out_c) && conv16_fits32(weight, len, out_c, bias);
}

/* The fast path (conv16_fast_ok holds): the input rows themselves, or per output row up to
 * TABULA_CONV16_PATCH values of receptive fields gathered at a time. */
static __attribute__((noinline)) void conv16_fast_mve(const tabula_window *win, int32_t out_c, const int16_t *input,
                                                      const int8_t *weight, const int64_t *bias,
                                                      const tabula_requant *requant, TABULA_CONV_OUT_T *output)
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
                    const int32_t ix0 = (ox + i) * win->stride_x - win->pad_left;
                    const int16_t *f = conv_field16_mve(win, input, b, iy0, ix0, dst);
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
