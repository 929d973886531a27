/*
 * The Helium (MVE) path of tabula_conv2d_s8_folded for short rows: a receptive field of at most
 * TABULA_SMALL_K bytes (a first conv over 1-3 input channels, kh*kw*c <= 32; a pointwise conv over 8-32)
 * against at most TABULA_SMALL_OC output channels, requantized by the vector epilogue (every shift
 * >= 33).  Private to conv2d/tabula_conv2d_s8_folded.c.
 *
 * Once per call (tabula_small_prep) each output channel's weight row is copied into 16 or 32 bytes
 * (zero past len: the input lanes past len, read by zeroing predicated loads, meet zero weights), and
 * the bias, multiplier and VRSHL shift 32 - s laid out per block of 8 channels as even (0, 2, 4, 6) then
 * odd (1, 3, 5, 7) lanes.  Per pixel (tabula_small_pixel): the 1 or 2 input vectors loaded once, per
 * output channel 1 or 2 VLDRB + VMLADAV(A) (16 MACs each), the sums stored to the lane order above,
 * then per 8 channels + bias, VMULH, VRSHL, VQMOVNB / VQMOVNT back to channel order in int16 (saturating
 * at +-2^15 first changes nothing: zp, lo, hi are int8), + zp (VQADD), the clamp, and one VSTRB.16:
 * bit-exact with tabula_requantize32 (tabula_requant4_s8_mve's proof).  Sums wrap modulo 2^32 as the
 * portable path's.
 */
#ifndef TABULA_CONV2D_SMALL_MVE_H
#define TABULA_CONV2D_SMALL_MVE_H

#include "tabula_mve.h"

#if TABULA_HAVE_MVE

#define TABULA_SMALL_K 32
#define TABULA_SMALL_OC 32

typedef struct {
    int32_t bias[TABULA_SMALL_OC], m[TABULA_SMALL_OC], sh[TABULA_SMALL_OC]; /* per 8: even then odd lanes */
    int16_t lo[8], hi[8];
    int8_t w[TABULA_SMALL_OC][TABULA_SMALL_K]; /* row o: its len weights, then zeros */
    int32_t len, nv, out_c;                    /* nv: 16-byte vectors per row (1, 2) */
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

static void tabula_small_prep(tabula_small_blk *blk, const int8_t *weight, int32_t len, int32_t out_c,
                              const int32_t *bias, const tabula_requant *rq)
{
    const mve_pred16_t p0 = vctp8q((uint32_t)len), p1 = vctp8q((uint32_t)(len > 16 ? len - 16 : 0));
    int32_t o;
    blk->len = len;
    blk->nv = len > 16 ? 2 : 1;
    blk->out_c = out_c;
    for (o = 0; o < ((out_c + 7) & ~7); ++o) {
        const int32_t s = tabula_small_slot(o), real = o < out_c;
        blk->bias[s] = real && bias ? bias[o] : 0;
        blk->m[s] = real ? tabula_requant_m(rq, o) : 0;
        blk->sh[s] = real ? 32 - tabula_requant_s(rq, o) : 0;
        vstrbq_s8(blk->w[o], real ? vldrbq_z_s8(weight + o * len, p0) : vdupq_n_s8(0));
        vstrbq_s8(blk->w[o] + 16, real ? vldrbq_z_s8(weight + o * len + 16, p1) : vdupq_n_s8(0));
    }
    vstrhq_s16(blk->lo, vdupq_n_s16((int16_t)rq->out_min));
    vstrhq_s16(blk->hi, vdupq_n_s16((int16_t)rq->out_max));
}

/* Requantize the 8 sums of channels o8.. (acc, in the slots' order) plus their bias into out[o8..]. */
static inline void tabula_small_store8(const tabula_small_blk *blk, const int32_t *acc, int32_t o8, int32_t zp,
                                       int8_t *out)
{
    const int32x4_t e = vaddq_s32(vldrwq_s32(acc), vldrwq_s32(blk->bias + o8)); /* modulo 2^32 */
    const int32x4_t o = vaddq_s32(vldrwq_s32(acc + 4), vldrwq_s32(blk->bias + o8 + 4));
    const int16x8_t h = tabula_requant8_eo_s8_mve(e, o, blk->m + o8, blk->sh + o8, zp, vldrhq_s16(blk->lo),
                                                  vldrhq_s16(blk->hi));
    if (blk->out_c - o8 >= 8) {
        vstrbq_s16(out + o8, h);
    } else {
        vstrbq_p_s16(out + o8, h, vctp16q((uint32_t)(blk->out_c - o8)));
    }
}

/* One pixel: x[0..len) against every output channel, requantized into out[0..out_c). */
static __attribute__((noinline)) void tabula_small_pixel(const tabula_small_blk *blk, const int8_t *x, int32_t zp, int8_t *out)
{
    const int32_t len = blk->len, out_c = blk->out_c;
    const int8x16_t x0 = vldrbq_z_s8(x, vctp8q((uint32_t)len));
    int32_t o8, j, acc[8];
    if (blk->nv == 2) {
        const int8x16_t x1 = vldrbq_z_s8(x + 16, vctp8q((uint32_t)(len - 16)));
        for (o8 = 0; o8 < out_c; o8 += 8) {
#pragma GCC unroll 8
            for (j = 0; j < 8; ++j) {
                acc[tabula_small_slot(j)] = vmladavaq_s8(vmladavq_s8(x0, vldrbq_s8(blk->w[o8 + j])), x1,
                                                         vldrbq_s8(blk->w[o8 + j] + 16));
            }
            tabula_small_store8(blk, acc, o8, zp, out);
        }
        return;
    }
    for (o8 = 0; o8 < out_c; o8 += 8) {
#pragma GCC unroll 8
        for (j = 0; j < 8; ++j) {
            acc[tabula_small_slot(j)] = vmladavq_s8(x0, vldrbq_s8(blk->w[o8 + j]));
        }
        tabula_small_store8(blk, acc, o8, zp, out);
    }
}
#endif /* TABULA_HAVE_MVE */

#endif /* TABULA_CONV2D_SMALL_MVE_H */
