/*
 * The Helium (MVE) path of DEPTHWISE_CONV2D, typed by the macros of tabula_depthwise_conv2d_impl.h
 * (which includes this file; see its comment for the scheme).  Private to depthwise_conv2d/.
 */
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
    if (rq->vec) { /* 8 channels requantized as two vectors, bit-exact with tabula_requantize32 */
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
                TABULA_DW_PIXEL_TAPS(o0, oc, c, oc, 0)
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
