/*
 * CONV2D int8 x int8 with the input zero point folded into the bias at build time.  Contract:
 * manifest.toml (conv2d, tabula_conv2d_s8_folded); codegen (tabula.codegen.fuse.fold_input_zp) passes
 * bias' = bias - input_zp * sum(w[o]) and pad_value = input_zp, which makes it TOSA CONV2D (the Python
 * twin tabula/reference/ops/conv2d.py) with weight_zp 0:
 *     sum_valid (x - zp) w = sum_all x~ w - zp sum_all w,   x~ = x inside, zp in the padding.
 * No weight is summed at run time.  Accumulation is modulo 2^32 (unsigned, never undefined); it equals
 * the exact sum whenever that fits int32 (codegen folds only when bias' fits).
 *
 * Helium (MVE, Cortex-M55); every path computes the same sum modulo 2^32:
 *   small:  a receptive field of at most 64 bytes (a first conv: kws's 10x4x1 is 40; a pointwise conv
 *           over 8-64) into at most 64 output channels, every shift >= 33: tabula_conv2d_small_mve.h, the
 *           input rows themselves (1x1, stride 1, no padding) or up to 2 KiB of one output row's fields
 *           gathered at a time (im2col), 1-4 VMLAV per output channel and pixel (the row zero-padded to
 *           16 bytes), the requantization in vector registers;
 *   gemm:   1x1, stride 1, no padding: one GEMM straight over the NHWC rows (tabula_gemm_s8_mve), no
 *           copy at all; per output pixel otherwise:
 *   direct: a 1x1 window inside the input: its row is the input vector;
 *   pair:   kh*kw*c a multiple of 16 and every shift >= 33: two neighbouring output pixels of a row at
 *           once (conv_pair_mve), both receptive fields as rows (as patch below), then
 *           tabula_gemv2_acc_s8_mve: 2 output channels x 2 pixels per pass, each weight vector loaded
 *           once for both pixels (conv 3x3 16->32: 0.319 -> 0.235 instructions per MAC); an odd last
 *           pixel of the row takes patch;
 *   patch:  the receptive field (kh*kw*c <= TABULA_CONV_PATCH_MAX bytes) gathered once into a
 *           contiguous patch (an interior window with dilation_x 1 as kh rows of kw*c bytes; padded
 *           taps filled with pad_value), then tabula_gemv_s8_mve: 4 output channels per pass;
 *   taps:   a larger field, tiled by taps: per block of 4 output channels the accumulators stay in
 *           registers across the kh*kw taps, each read straight from the input row (c contiguous
 *           bytes, no copy) or, padded, from a pad_value broadcast -- any size, no scalar fallback.
 * Requantization: the vector epilogue (tabula_requant_row_s8_mve / tabula_requant4_s8_mve) when every
 * shift is >= 33 (always, for real layers), else tabula_store_acc32 per output.
 * -DTABULA_PORTABLE_ONLY=1 forces the portable path.
 * Cost rule (measured with tabula.harness.device on QEMU mps3-an547, -icount, 3x3 pad 1 on 16x16,
 * instructions Helium / portable): cin 1 -> cout 1: 135,906 / 115,156 (the per-pixel gather and call
 * dominate 9 MACs); cin 1 -> 4: 126,000 / 437,875; cin 2 -> 8: 154,250 / 940,375; cin 16 -> 32
 * (0.32 / ~6.6 per MAC).  So Helium loses only when c == 1 and out_c == 1 (a 1-channel conv, where the
 * portable loop is taken); everywhere else it wins by 3x or more.
 *
 * DSP (Cortex-M4, M7, M33; tabula_conv2d_dsp.h), a patch of at most TABULA_DSP_PATCH_MAX values: the CONV2D
 * DSP path of tabula_conv2d_s8 with the patch holding x inside and pad_value in the padding (two
 * pixels widened once, 2 output channels x 2 pixels per SMLAD block); same bits as the portable path.
 */
#include "fully_connected/tabula_gemm_s8_mve.h"
#include "tabula_conv2d_dsp.h"
#include "tabula_conv2d_small_mve.h"

#if TABULA_HAVE_MVE
#define TABULA_CONV_PATCH_MAX 2048

/* The input row of tap (iy, ix) of image b, or NULL when the tap is in the padding. */
static const int8_t *conv_tap(const tabula_window *win, const int8_t *input, int32_t b, int32_t iy, int32_t ix)
{
    if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) {
        return 0;
    }
    return input + ((b * win->h + iy) * win->w + ix) * win->c;
}

/* The receptive field (window at iy0, ix0 of image b, kh*kw*c <= TABULA_CONV_PATCH_MAX bytes) as one
 * contiguous row: a 1x1 window inside the input is its input row, else it is gathered into patch (an
 * interior window with dilation_x 1 as kh rows of kw*c bytes; padded taps filled with pad_value). */
static inline __attribute__((always_inline)) const int8_t *
conv_field_mve(const tabula_window *win, const int8_t *input, int32_t pad_value, int32_t b, int32_t iy0, int32_t ix0,
               int8_t *patch)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    int8_t *dst = patch;
    int32_t ky, kx;
    if (kh == 1 && kw == 1) {
        const int8_t *x = conv_tap(win, input, b, iy0, ix0);
        if (x) {
            return x;
        }
    }
    if (win->dilation_x == 1 && iy0 >= 0 && ix0 >= 0 && iy0 + (kh - 1) * win->dilation_y < win->h
        && ix0 + kw - 1 < win->w) { /* inside the input: kh rows of kw*c contiguous bytes */
        const int8_t *row = input + ((b * win->h + iy0) * win->w + ix0) * c;
        for (ky = 0; ky < kh; ++ky, dst += kw * c, row += win->dilation_y * win->w * c) {
            tabula_copy_s8_mve(dst, row, kw * c);
        }
        return patch;
    }
    for (ky = 0; ky < kh; ++ky) {
        for (kx = 0; kx < kw; ++kx) {
            const int8_t *x = conv_tap(win, input, b, iy0 + ky * win->dilation_y, ix0 + kx * win->dilation_x);
            if (x) {
                tabula_copy_s8_mve(dst, x, c);
            } else {
                tabula_fill_s8_mve(dst, pad_value, c);
            }
            dst += c;
        }
    }
    return patch;
}

/* The receptive fields of output pixels ox0 .. ox0 + n - 1 of the output row whose windows start at input
 * row iy0 (image b), len = kh*kw*c bytes each, one after the other into patch (n * len <=
 * TABULA_CONV_PATCH_MAX).  Kernel rows of at most 16 bytes with dilation_x 1: per kernel row one load
 * predicated to the columns inside the input (lanes outside are not read), VPSEL with pad_value, one
 * predicated store; a kernel row in the padding is pad_value.  Others: conv_field_mve. */
static void conv_fields_mve(const tabula_window *win, const int8_t *input, int32_t pad_value, int32_t b, int32_t iy0,
                            int32_t ox0, int32_t n, int8_t *patch)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w, rowb = kw * c, len = kh * rowb;
    const int8x16_t pad = vdupq_n_s8((int8_t)pad_value);
    const mve_pred16_t p = vctp8q((uint32_t)rowb);
    const int rows16 = win->dilation_x == 1 && rowb <= 16;
    uintptr_t row[TABULA_SMALL_K]; /* per kernel row (kh <= len <= TABULA_SMALL_K): its input row, 0: padding */
    int32_t i, ky;
    for (ky = 0; rows16 && ky < kh; ++ky) {
        const int32_t iy = iy0 + ky * win->dilation_y;
        row[ky] = iy >= 0 && iy < win->h ? (uintptr_t)(input + (b * win->h + iy) * win->w * c) : 0u;
    }
    for (i = 0; i < n; ++i, patch += len) {
        const int32_t ix0 = (ox0 + i) * win->stride_x - win->pad_left;
        if (rows16) {
            const int32_t lo = ix0 < 0 ? -ix0 * c : 0, hi = (win->w - ix0) * c; /* the lanes inside: [lo, hi) */
            const mve_pred16_t in = (lo == 0 && hi >= rowb) ? p
                                    : vctp8q((uint32_t)(hi < 0 ? 0 : (hi < rowb ? hi : rowb))) & ~vctp8q((uint32_t)lo);
            for (ky = 0; ky < kh; ++ky) { /* the row's first tap may lie left of the input: not read */
                const int8_t *x = (const int8_t *)(row[ky] + (uintptr_t)(ix0 * c));
                vstrbq_p_s8(patch + ky * rowb, row[ky] ? vpselq_s8(vldrbq_z_s8(x, in), pad, in) : pad, p);
            }
        } else {
            const int8_t *x = conv_field_mve(win, input, pad_value, b, iy0, ix0, patch);
            if (x != patch) { /* a 1x1 window inside the input: its row */
                tabula_copy_s8_mve(patch, x, len);
            }
        }
    }
}

/* The short-row path (tabula_conv2d_small_mve.h): the input rows themselves for a 1x1 conv with stride 1
 * and no padding, else up to TABULA_CONV_PATCH_MAX bytes of one output row's receptive fields gathered at
 * a time.  Out of line: its 5 KiB block stays out of the caller's frame. */
static __attribute__((noinline)) void conv_small_mve(const tabula_window *win, int32_t out_c, const int8_t *input,
                                                     int32_t pad_value, const int8_t *weight, const int32_t *bias,
                                                     const tabula_requant *requant, int8_t *patch, int8_t *output)
{
    const int32_t len = win->kernel_h * win->kernel_w * win->c, chunk = TABULA_CONV_PATCH_MAX / len;
    const int32_t zp = requant->output_zp;
    tabula_small_blk blk;
    int32_t b, oy, ox;
    tabula_small_prep(&blk, weight, len, out_c, bias, requant);
    if (win->kernel_h == 1 && win->kernel_w == 1 && win->stride_y == 1 && win->stride_x == 1 && win->pad_top == 0
        && win->pad_left == 0 && win->out_h == win->h && win->out_w == win->w) {
        tabula_small_rows(&blk, input, len, win->n * win->h * win->w, zp, output);
        return;
    }
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            for (ox = 0; ox < win->out_w; ox += chunk) {
                const int32_t nx = win->out_w - ox < chunk ? win->out_w - ox : chunk;
                conv_fields_mve(win, input, pad_value, b, oy * win->stride_y - win->pad_top, ox, nx, patch);
                tabula_small_rows(&blk, patch, len, nx, zp, output + ((b * win->out_h + oy) * win->out_w + ox) * out_c);
            }
        }
    }
}

/* Two neighbouring output pixels of one output row (windows at (iy0, ix0) and (iy0, ix0 + stride_x) of
 * image b, len = kh*kw*c a multiple of 16, 2 len <= TABULA_CONV_PATCH_MAX), every output channel,
 * requantized by the vector epilogue (every shift >= 33) to out[0..out_c) and out[out_c..2 out_c): both
 * receptive fields as rows (conv_field_mve), then tabula_gemv2_acc_s8_mve, each weight vector loaded
 * once for the two pixels, per tile of up to TABULA_GEMM_TILE channels. */
static void conv_pair_mve(const tabula_window *win, int32_t out_c, const int8_t *input, int32_t pad_value,
                          const int8_t *weight, const int32_t *bias, int32_t b, int32_t iy0, int32_t ix0, int8_t *patch,
                          const tabula_requant *requant, int8_t *out)
{
    const int32_t len = win->kernel_h * win->kernel_w * win->c;
    const int8_t *x0 = conv_field_mve(win, input, pad_value, b, iy0, ix0, patch);
    const int8_t *x1 = conv_field_mve(win, input, pad_value, b, iy0, ix0 + win->stride_x, patch + len);
    int32_t acc[2 * TABULA_GEMM_TILE], t;
    for (t = 0; t < out_c; t += TABULA_GEMM_TILE) {
        const int32_t nt = out_c - t < TABULA_GEMM_TILE ? out_c - t : TABULA_GEMM_TILE;
        tabula_gemv2_acc_s8_mve(x0, x1, weight + t * len, len, nt, bias ? bias + t : 0, acc);
        tabula_requant_row_s8_mve(acc, nt, requant, t, out + t);
        tabula_requant_row_s8_mve(acc + TABULA_GEMM_TILE, nt, requant, t, out + out_c + t);
    }
}

/* One output pixel (window at iy0, ix0 of image b) of every output channel, written at out. */
static void conv_pixel_mve(const tabula_window *win, int32_t out_c, const int8_t *input, int32_t pad_value,
                           const int8_t *weight, const int32_t *bias, int32_t b, int32_t iy0, int32_t ix0,
                           int8_t *patch, const tabula_requant *requant, int vec_rq, void *out)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t len = kh * kw * c;
    int32_t ky, kx, o, acc[4];
    if (len <= TABULA_CONV_PATCH_MAX) {
        tabula_gemv_s8_mve(conv_field_mve(win, input, pad_value, b, iy0, ix0, patch), len, weight, out_c, bias,
                           requant, vec_rq, out);
        return;
    }
    for (o = 0; o < out_c; o += 4) {
        const int32_t nch = out_c - o < 4 ? out_c - o : 4;
        const int8_t *wo = weight + o * len;
        tabula_acc4_init(acc, bias, o, nch);
        for (ky = 0; ky < kh; ++ky) {
            for (kx = 0; kx < kw; ++kx) {
                const int8_t *x = conv_tap(win, input, b, iy0 + ky * win->dilation_y, ix0 + kx * win->dilation_x);
                tabula_dot4_s8_mve(x, pad_value, c, wo + (ky * kw + kx) * c, len, nch, acc);
            }
        }
        tabula_acc4_store_s8(acc, o, nch, requant, vec_rq, out);
    }
}
#endif

tabula_status tabula_conv2d_s8_folded(const tabula_window *win, int32_t out_c, const int8_t *input,
                                      int32_t pad_value, const int8_t *weight, const int32_t *bias,
                                      const tabula_requant *requant, void *output)
{
    int32_t b, oy, ox, oc, ky, kx, i;
    int32_t rq_zp = 0, rq_lo = 0, rq_hi = 0;
    if (!tabula_conv_window_ok(win) || out_c < 1 || pad_value < -128 || pad_value > 127
        || TABULA_REQUANT_INVALID(requant, out_c, int8_t)) {
        return TABULA_ERR_ARG;
    }
    TABULA_REQUANT_READ(requant, rq_zp, rq_lo, rq_hi)
#if TABULA_HAVE_MVE
    if (win->c > 1 || out_c > 1) { /* the cost rule above */
        int8_t patch[TABULA_CONV_PATCH_MAX];
        const int vec_rq = requant != 0 && tabula_requant_shifts_ge33(requant, out_c);
        const int32_t len = win->kernel_h * win->kernel_w * win->c;
        if (vec_rq && tabula_small_fits(len, out_c)) { /* short rows, few channels: tabula_conv2d_small_mve.h */
            conv_small_mve(win, out_c, input, pad_value, weight, bias, requant, patch, (int8_t *)output);
            return TABULA_OK;
        }
        if (win->kernel_h == 1 && win->kernel_w == 1 && win->stride_y == 1 && win->stride_x == 1
            && win->pad_top == 0 && win->pad_left == 0 && win->out_h == win->h && win->out_w == win->w) {
            /* 1x1, stride 1, no padding: one GEMM straight over the NHWC rows, no copy */
            tabula_gemm_s8_mve(win->n * win->h * win->w, input, win->c, weight, out_c, bias, requant, vec_rq, output);
            return TABULA_OK;
        }
        const int pairs = vec_rq && len % 16 == 0 && 2 * len <= TABULA_CONV_PATCH_MAX; /* conv_pair_mve */
        for (b = 0; b < win->n; ++b) {
            for (oy = 0; oy < win->out_h; ++oy) {
                for (ox = 0; ox < win->out_w; ++ox) {
                    const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * out_c;
                    if (pairs && ox + 1 < win->out_w) { /* two pixels at once; a last odd one below */
                        conv_pair_mve(win, out_c, input, pad_value, weight, bias, b, oy * win->stride_y - win->pad_top,
                                      ox * win->stride_x - win->pad_left, patch, requant, (int8_t *)output + pix);
                        ++ox;
                        continue;
                    }
                    conv_pixel_mve(win, out_c, input, pad_value, weight, bias, b, oy * win->stride_y - win->pad_top,
                                   ox * win->stride_x - win->pad_left, patch, requant, vec_rq,
                                   requant ? (void *)((int8_t *)output + pix) : (void *)((int32_t *)output + pix));
                }
            }
        }
        return TABULA_OK;
    }
#elif TABULA_HAVE_DSP
    if (win->kernel_h * win->kernel_w * win->c <= TABULA_DSP_PATCH_MAX) {
        tabula_dsp_conv2d_s8(win, out_c, input, 0, pad_value, weight, bias, requant, output);
        return TABULA_OK;
    }
#endif
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            for (ox = 0; ox < win->out_w; ++ox) {
                const int32_t ix0 = ox * win->stride_x - win->pad_left;
                const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * out_c;
                for (oc = 0; oc < out_c; ++oc) {
                    const int8_t *wo = weight + oc * win->kernel_h * win->kernel_w * win->c;
                    uint32_t acc = bias ? (uint32_t)bias[oc] : 0u;
                    for (ky = 0; ky < win->kernel_h; ++ky) {
                        const int32_t iy = iy0 + ky * win->dilation_y;
                        for (kx = 0; kx < win->kernel_w; ++kx) {
                            const int32_t ix = ix0 + kx * win->dilation_x;
                            const int8_t *wp = wo + (ky * win->kernel_w + kx) * win->c;
                            if (iy < 0 || iy >= win->h || ix < 0 || ix >= win->w) { /* x~ = pad_value */
                                for (i = 0; pad_value != 0 && i < win->c; ++i) {
                                    acc += (uint32_t)(pad_value * (int32_t)wp[i]);
                                }
                            } else {
                                const int8_t *xp = input + ((b * win->h + iy) * win->w + ix) * win->c;
                                for (i = 0; i < win->c; ++i) {
                                    acc += (uint32_t)((int32_t)xp[i] * (int32_t)wp[i]);
                                }
                            }
                        }
                    }
                    tabula_store_acc32(output, pix + oc, tabula_u32_to_s32(acc), requant, oc, rq_zp, rq_lo, rq_hi);
                }
            }
        }
    }
    return TABULA_OK;
}
