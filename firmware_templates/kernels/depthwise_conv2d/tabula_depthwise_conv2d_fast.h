/*
 * The Helium and DSP paths of DEPTHWISE_CONV2D (tabula_dw_fast), typed by the macros of
 * tabula_depthwise_conv2d_impl.h (which includes this file after tabula_dw_rq, tabula_dw_put and
 * tabula_dw_taps; see its comment for the scheme).  Their helpers: tabula_depthwise_conv2d_mve.h,
 * tabula_depthwise_conv2d_dsp.h.  Private to depthwise_conv2d/.
 */
#include "tabula_depthwise_conv2d_mve.h"
#include "tabula_depthwise_conv2d_mve16.h"
#include "tabula_depthwise_conv2d_dsp.h"

#if TABULA_HAVE_MVE || TABULA_HAVE_DSP
/* At most this many taps per window on the Helium and DSP paths: the tap list lives on the stack (2 KiB),
 * and an int16 tap sum of 256 products |x w| <= 2^22 stays below 2^31. */
#define TABULA_DW_FAST_TAPS 256
#if TABULA_HAVE_MVE
#define TABULA_DW_MULT_PARAM int32_t mult, /* the DSP path takes multiplier 1 only */
#else
#define TABULA_DW_MULT_PARAM
#endif
/* int16 on Helium: out of line, so that tabula_dw_body's choice of tabula_dw_mve16 leaves its register
 * allocation alone (a16w8 3x3 pad 1 on a 3x3x256 map, QEMU M55: 57,531 instructions inlined, 51,656 out of
 * line). */
#if TABULA_HAVE_MVE && TABULA_DW_WIDE
#define TABULA_DW_FAST_ATTR __attribute__((noinline))
#else
#define TABULA_DW_FAST_ATTR
#endif

/* The Helium and DSP paths (weight_zp 0, at most TABULA_DW_FAST_TAPS taps; Helium: C < 65536, DSP:
 * multiplier 1), one walk: per output pixel its window is clipped to the input, a pixel with no real tap
 * is its bias, and the real taps are listed once as offsets from the first one (off[2 t]: input, in
 * elements on Helium and bytes on DSP, whose assembly loop also wants the list ended by an input offset
 * of -1; off[2 t + 1]: weight), rebuilt only when the clipped window changes, so interior pixels share
 * one list.  Then the path's channel loop over that list:
 *   Helium: each block of 8 output channels is one flat loop, full blocks (M == 1) with unpredicated
 *   loads, the rest (and every channel when M > 1, the input gathered at channel o / M) predicated;
 *   tabula_dw_store_mve writes them (tabula_depthwise_conv2d_mve.h).
 *   DSP (see tabula_dsp.h for the lanes): per block of 4 channels tabula_dw_dsp_quad
 *   (tabula_depthwise_conv2d_dsp.h), the last C % 4 channels one at a time.  int8: the bias starts the
 *   sums, modulo 2^32 as on the portable path; int16: the tap sums (exact in 32 bits) are added to the
 *   64-bit bias, as the Helium path does.
 * Padded taps are skipped as on the portable path. */
static TABULA_DW_FAST_ATTR void tabula_dw_fast(const tabula_window *win, TABULA_DW_MULT_PARAM const TABULA_DW_T *input,
                                               int32_t input_zp, const int8_t *weight, const TABULA_DW_ACC_T *bias,
                                               const tabula_dw_rq *rq, void *output)
{
#if TABULA_HAVE_MVE
    const int32_t h = win->h, w = win->w, c = win->c, oc = c * mult, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t dy = win->dilation_y, dx = win->dilation_x;
    int32_t off[2 * TABULA_DW_FAST_TAPS]; /* per real tap: input offset, weight offset */
#else
    const int32_t h = win->h, w = win->w, c = win->c, oc = c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t dy = win->dilation_y, dx = win->dilation_x;
    const int32_t kx2 = tabula_dsp_k2(input_zp), xs = (int32_t)sizeof(TABULA_DW_T);
#if !TABULA_DW_WIDE && !TABULA_DW_CROSS
    const int32_t fast = tabula_dsp_epilogue(rq->requant, c), esize = rq->requant ? 1 : 4;
#endif
    int32_t off[2 * TABULA_DW_FAST_TAPS + 2]; /* per real tap: input, weight byte offset; then -1 */
#endif
    int32_t nt = 0, cy0 = -1, cy1 = -1, cx0 = -1, cx1 = -1;
    int32_t b, oy, ox, o, t;
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            int32_t ky0, ky1;
            tabula_dw_taps(iy0, kh, dy, h, &ky0, &ky1);
            for (ox = 0; ox < win->out_w; ++ox) {
                const int32_t ix0 = ox * win->stride_x - win->pad_left;
                const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * oc;
#if TABULA_HAVE_DSP && !TABULA_DW_WIDE && !TABULA_DW_CROSS
                void *const y = (int8_t *)output + pix * esize; /* the pixel's first output element */
#endif
                const TABULA_DW_T *xb;
                const int8_t *wb;
                int32_t kx0, kx1;
                tabula_dw_taps(ix0, kw, dx, w, &kx0, &kx1);
                if (ky0 == ky1 || kx0 == kx1) { /* no real tap: every channel is its bias */
                    for (o = 0; o < oc; ++o) {
                        tabula_dw_put(rq, bias ? bias[o] : 0, o, output, pix);
                    }
                    continue;
                }
                if (ky0 != cy0 || ky1 != cy1 || kx0 != cx0 || kx1 != cx1) { /* list the window's real taps */
                    int32_t ky, kx;
                    nt = 0;
                    for (ky = ky0; ky < ky1; ++ky) {
                        for (kx = kx0; kx < kx1; ++kx, ++nt) {
#if TABULA_HAVE_MVE
                            off[2 * nt] = ((ky - ky0) * dy * w + (kx - kx0) * dx) * c;
#else
                            off[2 * nt] = ((ky - ky0) * dy * w + (kx - kx0) * dx) * c * xs;
#endif
                            off[2 * nt + 1] = ((ky - ky0) * kw + (kx - kx0)) * oc;
                        }
                    }
#if TABULA_HAVE_DSP
                    off[2 * nt] = -1;
                    off[2 * nt + 1] = 0;
#endif
                    cy0 = ky0; cy1 = ky1; cx0 = kx0; cx1 = kx1;
                }
                xb = input + ((b * h + iy0 + ky0 * dy) * w + ix0 + kx0 * dx) * c;
                wb = weight + (ky0 * kw + kx0) * oc;
#if TABULA_HAVE_MVE
                o = 0;
                if (mult == 1) {
                    for (; o + 8 <= oc; o += 8) {
                        const TABULA_DW_T *xbo = xb + o;
                        const int8_t *wbo = wb + o;
                        const int32_t *op = off;
                        int32x4_t acc_e = vdupq_n_s32(0), acc_o = vdupq_n_s32(0);
                        for (t = 0; t < nt; ++t, op += 2) {
                            const int16x8_t xv = TABULA_DW_MINUS_ZP(TABULA_DW_LOAD(xbo + op[0]), input_zp);
                            const int16x8_t wv = vldrbq_s16(wbo + op[1]);
                            acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                            acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                        }
                        tabula_dw_store_mve(bias, o, 8, acc_e, acc_o, rq, output, pix);
                    }
                }
                for (; o < oc; o += 8) {
                    const int32_t rem = oc - o < 8 ? oc - o : 8;
                    const mve_pred16_t p = vctp16q((uint32_t)rem);
                    int32x4_t acc_e = vdupq_n_s32(0), acc_o = vdupq_n_s32(0);
                    if (mult == 1) {
                        for (t = 0; t < nt; ++t) {
                            const int16x8_t xv = TABULA_DW_MINUS_ZP(TABULA_DW_LOAD_Z(xb + o + off[2 * t], p), input_zp);
                            const int16x8_t wv = vldrbq_z_s16(wb + o + off[2 * t + 1], p);
                            acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                            acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                        }
                    } else { /* lane i reads input channel (o + i) / M */
                        uint16_t ch[8];
                        uint16x8_t offs;
                        int32_t i;
                        for (i = 0; i < 8; ++i) {
                            ch[i] = (uint16_t)((o + (i < rem ? i : 0)) / mult);
                        }
                        offs = vld1q_u16(ch);
                        for (t = 0; t < nt; ++t) {
                            const int16x8_t xv = TABULA_DW_MINUS_ZP(TABULA_DW_GATHER_Z(xb + off[2 * t], offs, p), input_zp);
                            const int16x8_t wv = vldrbq_z_s16(wb + o + off[2 * t + 1], p);
                            acc_e = vaddq_s32(acc_e, vmullbq_int_s16(xv, wv));
                            acc_o = vaddq_s32(acc_o, vmulltq_int_s16(xv, wv));
                        }
                    }
                    tabula_dw_store_mve(bias, o, rem, acc_e, acc_o, rq, output, pix);
                }
#else
                for (o = 0; o + 4 <= c; o += 4) {
                    int32_t a[4];
#if !TABULA_DW_WIDE && !TABULA_DW_CROSS
                    TABULA_DSP_BIAS4(a, bias, o);
                    tabula_dw_dsp_quad(xb + o, wb + o, off, kx2, a);
                    tabula_dsp_store4(rq->requant, fast, a, o, y);
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
#endif
            }
        }
    }
#if TABULA_HAVE_MVE && TABULA_DW_WIDE
    (void)input_zp; /* int16 is symmetric: no zero point to subtract (TABULA_DW_MINUS_ZP) */
#endif
}
#endif
