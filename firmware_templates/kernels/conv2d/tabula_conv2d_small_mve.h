/*
 * The Helium (MVE) path of tabula_conv2d_s8_folded for short rows: a receptive field of at most
 * TABULA_SMALL_K bytes (a first conv, kh*kw*c <= 64: kws's 10x4x1 is 40; a pointwise conv over 8-64)
 * against at most TABULA_SMALL_OC output channels, requantized by the vector epilogue (every shift
 * >= 33).  Private to conv2d/tabula_conv2d_s8_folded.c.
 *
 * Once per call (tabula_small_prep) each output channel's weight row is copied into 16, 32, 48 or 64 bytes
 * (zero past len: the input lanes past len, read by zeroing predicated loads, meet zero weights), and
 * the bias, multiplier and VRSHL shift 32 - s laid out per block of 8 channels as even (0, 2, 4, 6) then
 * odd (1, 3, 5, 7) lanes, the weight rows in that order.  Per pixel (tabula_small_rows): the 1-4 input
 * vectors loaded once (the last predicated to len), per
 * output channel 1-4 VLDRB + VMLADAV(A) (16 MACs each), the sums stored to the lane order above,
 * then per 8 channels + bias, VMULH, VRSHL, VQMOVNB / VQMOVNT back to channel order in int16 (saturating
 * at +-2^15 first changes nothing: zp, lo, hi are int8), + zp (VQADD), the clamp, and one VSTRB.16:
 * bit-exact with tabula_requantize32 (tabula_requant4_s8_mve's proof).  Sums wrap modulo 2^32 as the
 * portable path's.
 */
#ifndef TABULA_CONV2D_SMALL_MVE_H
#define TABULA_CONV2D_SMALL_MVE_H

#include <stddef.h>

#include "tabula_mve.h"

#if TABULA_HAVE_MVE

#define TABULA_SMALL_K 64
#define TABULA_SMALL_OC 64

/* Per block of 8 output channels, in slot order (tabula_small_slot: the even lanes, then the odd). */
typedef struct {
    int32_t bias[8], m[8], sh[8];
} tabula_small_rq8;

typedef struct {
    tabula_small_rq8 rq[TABULA_SMALL_OC / 8];
    int16_t lo[8], hi[8];                       /* the clamp bounds */
    int32_t len, nv, out_c, zp;                 /* nv: 16-byte vectors per row (1-4); zp: the output's */
    int8_t w[TABULA_SMALL_OC * TABULA_SMALL_K]; /* channel o's row at 16 nv slot(o): len weights, zeros */
} tabula_small_blk;

/* The slot of channel o (even lanes, then odd, per block of 8). */
static inline int32_t tabula_small_slot(int32_t o)
{
    return (o & ~7) + ((o & 1) << 2) + ((o & 7) >> 1);
}

/* The path applies: len <= TABULA_SMALL_K, out_c <= TABULA_SMALL_OC. */
static inline int tabula_small_fits(int32_t len, int32_t out_c)
{
    return len <= TABULA_SMALL_K && out_c <= TABULA_SMALL_OC;
}

/* Out of line: inlined, the caller's 5 KiB frame puts its stack arguments past ldr's 4 KiB offsets. */
static __attribute__((noinline)) void tabula_small_prep(tabula_small_blk *blk, const int8_t *weight, int32_t len,
                                                        int32_t out_c, const int32_t *bias, const tabula_requant *rq)
{
    const int32_t nv = (len + 15) >> 4;
    const mve_pred16_t p0 = vctp8q((uint32_t)len), p1 = vctp8q((uint32_t)(len > 16 ? len - 16 : 0));
    int32_t o;
    blk->len = len;
    blk->nv = nv;
    blk->out_c = out_c;
    blk->zp = rq->output_zp;
    for (o = 0; o < ((out_c + 7) & ~7); ++o) {
        const int32_t s = tabula_small_slot(o), real = o < out_c;
        tabula_small_rq8 *r = &blk->rq[o >> 3];
        r->bias[s & 7] = real && bias ? bias[o] : 0;
        r->m[s & 7] = real ? tabula_requant_m(rq, o) : 0;
        r->sh[s & 7] = real ? 32 - tabula_requant_s(rq, o) : 0;
        int8_t *row = blk->w + 16 * nv * s;
        const int8_t *wo = weight + o * len;
        vstrbq_s8(row, real ? vldrbq_z_s8(wo, p0) : vdupq_n_s8(0));
        if (nv >= 2) {
            vstrbq_s8(row + 16, real ? vldrbq_z_s8(wo + 16, p1) : vdupq_n_s8(0));
        }
    }
    const mve_pred16_t p2 = vctp8q((uint32_t)(len > 32 ? len - 32 : 0)), p3 = vctp8q((uint32_t)(len > 48 ? len - 48 : 0));
    for (o = 0; nv > 2 && o < ((out_c + 7) & ~7); ++o) { /* the third and fourth vectors */
        const int32_t real = o < out_c;
        int8_t *row = blk->w + 16 * nv * tabula_small_slot(o);
        vstrbq_s8(row + 32, real ? vldrbq_z_s8(weight + o * len + 32, p2) : vdupq_n_s8(0));
        if (nv == 4) {
            vstrbq_s8(row + 48, real ? vldrbq_z_s8(weight + o * len + 48, p3) : vdupq_n_s8(0));
        }
    }
    vstrhq_s16(blk->lo, vdupq_n_s16((int16_t)rq->out_min));
    vstrhq_s16(blk->hi, vdupq_n_s16((int16_t)rq->out_max));
}

/* Requantize the 8 sums of channels o8.. (acc, in the slots' order) plus their bias into out[o8..]. */
static inline void tabula_small_store8(const tabula_small_blk *blk, const int32_t *acc, int32_t o8, int32_t zp,
                                       int8_t *out)
{
    const tabula_small_rq8 *r = &blk->rq[o8 >> 3];
    const int32x4_t e = vaddq_s32(vldrwq_s32(acc), vldrwq_s32(r->bias)); /* modulo 2^32 */
    const int32x4_t o = vaddq_s32(vldrwq_s32(acc + 4), vldrwq_s32(r->bias + 4));
    const int16x8_t h = tabula_requant8_eo_s8_mve(e, o, r->m, r->sh, zp, vldrhq_s16(blk->lo), vldrhq_s16(blk->hi));
    if (blk->out_c - o8 >= 8) {
        vstrbq_s16(out + o8, h);
    } else {
        vstrbq_p_s16(out + o8, h, vctp16q((uint32_t)(blk->out_c - o8)));
    }
}

#if TABULA_USE_ASM
/* The assembly of tabula_small_rows (whole blocks of 8 channels; its C is the twin): per pixel the input
 * vector(s) (xload; vctp_len puts the length of the predicated one in s0), per block per slot VLDRB +
 * VMLAV (slot: one vector; two to four: + VLDRB + VMLAVA of the second in q5, the third in q6, the fourth
 * in q7), the 8 sums moved into the even / odd lane vectors by 4 VMOV, + bias, then the epilogue of
 * tabula_requant8_eo_s8_mve with the bounds held in q6, q7 (bounds, clamp) or, for 3-4 vectors, loaded
 * per block (clamp), and one VSTRB.16. */
#define TABULA_SMALL_SLOT1(s) "vldrb.u8 q1, [%[rw]], #16\n\t" "vmlav.s8 %[" s "], q0, q1\n\t"
#define TABULA_SMALL_SLOT2(s) TABULA_SMALL_SLOT1(s) "vldrb.u8 q1, [%[rw]], #16\n\t" "vmlava.s8 %[" s "], q5, q1\n\t"
#define TABULA_SMALL_SLOT3(s) TABULA_SMALL_SLOT2(s) "vldrb.u8 q1, [%[rw]], #16\n\t" "vmlava.s8 %[" s "], q6, q1\n\t"
#define TABULA_SMALL_SLOT4(s) TABULA_SMALL_SLOT3(s) "vldrb.u8 q1, [%[rw]], #16\n\t" "vmlava.s8 %[" s "], q7, q1\n\t"
/* The clamp: 1-2 vectors, the bounds held in q6, q7 (loaded once); 3-4, q6 and q7 hold input vectors, the
 * bounds loaded into q1 per block of 8 channels. */
#define TABULA_SMALL_BOUNDS_HELD "add %[s1], %[blk], %[o_lo]\n\t" "vldrh.u16 q6, [%[s1]]\n\t" "vldrh.u16 q7, [%[s1], #16]\n\t"
#define TABULA_SMALL_CLAMP_HELD "vmax.s16 q4, q4, q6\n\t" "vmin.s16 q4, q4, q7\n\t"
#define TABULA_SMALL_CLAMP_LOAD "add %[s1], %[blk], %[o_lo]\n\t" "vldrh.u16 q1, [%[s1]]\n\t" "vmax.s16 q4, q4, q1\n\t" \
    "vldrh.u16 q1, [%[s1], #16]\n\t" "vmin.s16 q4, q4, q1\n\t"
/* The 4 sums of one lane vector q (slots s0..s3) and their VMOV into it.  VMOV Qd[2], Qd[0], Rt, Rt2 as
 * GNU as 2.38 encodes it: lane 0 = Rt, lane 2 = Rt2 (measured). */
#define TABULA_SMALL_HALF(slot, q) slot("s0") slot("s1") slot("s2") slot("s3")                                    \
    "vmov " q "[2], " q "[0], %[s0], %[s2]\n\t" "vmov " q "[3], " q "[1], %[s1], %[s3]\n\t"
#define TABULA_SMALL_ASM(vctp_len, xload, slot, bounds, clamp)                                                       \
    do {                                                                                                             \
        const int8_t *rw, *rb;                                                                                       \
        int32_t s0, s1, s2, s3, kb;                                                                                  \
        __asm__ volatile(                                                                                             \
            bounds                                                                                                    \
            vctp_len "vctp.8 %[s0]\n\t"                                                                               \
            "dls lr, %[n]\n"                                                                                          \
            "1:\n\t"                                                                                                  \
            xload                                                                                                     \
            "add %[x], %[x], %[xstep]\n\t"                                                                            \
            "mov %[rb], %[blk]\n\t"                                                                                   \
            "add %[rw], %[blk], %[o_w]\n\t"                                                                           \
            "ldr %[kb], [%[blk], %[o_oc]]\n\t"                                                                        \
            "lsrs %[kb], %[kb], #3\n"                                                                                 \
            "2:\n\t"                                                                                                  \
            TABULA_SMALL_HALF(slot, "q2")                                                                             \
            TABULA_SMALL_HALF(slot, "q3")                                                                             \
            "vldrw.u32 q4, [%[rb]]\n\t"                                                                               \
            "vadd.i32 q2, q2, q4\n\t"                                                                                 \
            "vldrw.u32 q4, [%[rb], #16]\n\t"                                                                          \
            "vadd.i32 q3, q3, q4\n\t"                                                                                 \
            "vldrw.u32 q4, [%[rb], #32]\n\t"                                                                         \
            "vmulh.s32 q2, q2, q4\n\t"                                                                                \
            "vldrw.u32 q4, [%[rb], #64]\n\t"                                                                         \
            "vrshl.s32 q2, q2, q4\n\t"                                                                                \
            "vldrw.u32 q4, [%[rb], #48]\n\t"                                                                         \
            "vmulh.s32 q3, q3, q4\n\t"                                                                                \
            "vldrw.u32 q4, [%[rb], #80]\n\t"                                                                         \
            "vrshl.s32 q3, q3, q4\n\t"                                                                                \
            "vqmovnb.s32 q4, q2\n\t"                                                                                  \
            "vqmovnt.s32 q4, q3\n\t"                                                                                  \
            "ldr %[s0], [%[blk], %[o_zp]]\n\t"                                                                        \
            "vqadd.s16 q4, q4, %[s0]\n\t"                                                                             \
            clamp                                                                                                     \
            "vstrb.16 q4, [%[out]], #8\n\t"                                                                           \
            "add %[rb], %[rb], #96\n\t"                                                                               \
            "subs %[kb], %[kb], #1\n\t"                                                                               \
            "bne 2b\n\t"                                                                                              \
            "le lr, 1b\n\t"                                                                                           \
            : [x] "+r"(x), [out] "+l"(out), [rw] "=&r"(rw), [rb] "=&r"(rb), [kb] "=&r"(kb), [s0] "=&Te"(s0),          \
              [s1] "=&Te"(s1), [s2] "=&Te"(s2), [s3] "=&Te"(s3)                                                       \
            : [blk] "r"(blk), [xstep] "r"(xstep), [n] "r"(n), [o_lo] "i"(offsetof(tabula_small_blk, lo)),             \
              [o_w] "i"(offsetof(tabula_small_blk, w)), [o_len] "i"(offsetof(tabula_small_blk, len)),                 \
              [o_oc] "i"(offsetof(tabula_small_blk, out_c)), [o_zp] "i"(offsetof(tabula_small_blk, zp))               \
            : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "memory", "cc");                                  \
    } while (0)
#endif

/* n pixels: x + i xstep [0..len) against every output channel, requantized into out + i out_c [0..out_c).
 * Out of line: one call per row of pixels keeps the prologue out of the pixel loop. */
static __attribute__((noinline)) void tabula_small_rows(const tabula_small_blk *blk, const int8_t *x, int32_t xstep,
                                                        int32_t n, int32_t zp, int8_t *out)
{
    const int32_t len = blk->len, out_c = blk->out_c;
    int32_t i, o8, j, v, acc[8];
#if TABULA_USE_ASM
    if ((out_c & 7) == 0) {
        (void)len;
        (void)zp; /* blk->zp */
        if (blk->nv == 1) {
            TABULA_SMALL_ASM("ldr %[s0], [%[blk], %[o_len]]\n\t", "vpst\n\t" "vldrbt.u8 q0, [%[x]]\n\t",
                             TABULA_SMALL_SLOT1, TABULA_SMALL_BOUNDS_HELD, TABULA_SMALL_CLAMP_HELD);
        } else if (blk->nv == 2) {
            TABULA_SMALL_ASM("ldr %[s0], [%[blk], %[o_len]]\n\t" "sub %[s0], %[s0], #16\n\t",
                             "vldrb.u8 q0, [%[x]]\n\t" "vpst\n\t" "vldrbt.u8 q5, [%[x], #16]\n\t", TABULA_SMALL_SLOT2,
                             TABULA_SMALL_BOUNDS_HELD, TABULA_SMALL_CLAMP_HELD);
        } else if (blk->nv == 3) {
            TABULA_SMALL_ASM("ldr %[s0], [%[blk], %[o_len]]\n\t" "sub %[s0], %[s0], #32\n\t",
                             "vldrb.u8 q0, [%[x]]\n\t" "vldrb.u8 q5, [%[x], #16]\n\t" "vpst\n\t"
                             "vldrbt.u8 q6, [%[x], #32]\n\t",
                             TABULA_SMALL_SLOT3, "", TABULA_SMALL_CLAMP_LOAD);
        } else {
            TABULA_SMALL_ASM("ldr %[s0], [%[blk], %[o_len]]\n\t" "sub %[s0], %[s0], #48\n\t",
                             "vldrb.u8 q0, [%[x]]\n\t" "vldrb.u8 q5, [%[x], #16]\n\t" "vldrb.u8 q6, [%[x], #32]\n\t"
                             "vpst\n\t" "vldrbt.u8 q7, [%[x], #48]\n\t",
                             TABULA_SMALL_SLOT4, "", TABULA_SMALL_CLAMP_LOAD);
        }
        return;
    }
#endif
    for (i = 0; i < n; ++i, x += xstep, out += out_c) {
        const int32_t nv = blk->nv;
        int8x16_t xv[TABULA_SMALL_K / 16];
        const int8_t *w = blk->w;
        for (v = 0; v < nv; ++v) { /* the last vector predicated to len */
            xv[v] = vldrbq_z_s8(x + 16 * v, vctp8q((uint32_t)(len - 16 * v)));
        }
        for (o8 = 0; o8 < out_c; o8 += 8, w += 128 * nv) {
            for (j = 0; j < 8; ++j) { /* slot j */
                acc[j] = vmladavq_s8(xv[0], vldrbq_s8(w + 16 * nv * j));
                for (v = 1; v < nv; ++v) {
                    acc[j] = vmladavaq_s8(acc[j], xv[v], vldrbq_s8(w + 16 * (nv * j + v)));
                }
            }
            tabula_small_store8(blk, acc, o8, zp, out);
        }
    }
}
#endif /* TABULA_HAVE_MVE */

#endif /* TABULA_CONV2D_SMALL_MVE_H */
