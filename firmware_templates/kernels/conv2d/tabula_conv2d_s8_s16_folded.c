/*
 * CONV2D int8 x int8 with the input zero point folded into the bias, requantized to int16: a precision
 * boundary of scheme=mixed (an int8 layer's conv whose output grid is int16).  Contract: manifest.toml
 * (conv2d, tabula_conv2d_s8_s16_folded); Python twin: tabula/reference/ops/conv2d.py, then rescale.py
 * (int32 -> int16, apply_scale_32), then clamp.py.
 *
 * Scheme: the output is computed in tiles of whole output rows (as many as fit TABULA_XD_TILE int32
 * values on the stack, at least one): each tile is one call of tabula_conv2d_s8_folded (requant NULL:
 * every ISA path of that kernel, writing int32 accumulators) on the sub-window of the input rows that
 * tile reads -- input rows outside the sub-window are either padding (pad_value, as in the full
 * window) or read by no output of the tile, so the sums are the full window's bit for bit -- and the
 * tile's accumulators are then requantized into the int16 output: on Helium, when every shift is >= 33,
 * 4 channels per vector (tabula_requant4_s8_s16_mve: apply_scale_32's vector twin, tabula_mve.h), else
 * per value (tabula_requantize32).  No int32 tensor reaches the arena.  A tile whose rows all lie in the
 * padding (no input row at all), or an output row wider than the tile, takes the portable per-output
 * loop below (the sums of tabula_conv2d_s8_folded's portable path).
 */
#include "tabula_mve.h"
#include "tabula_requant.h"

/* int32 accumulators per tile (4 KiB of stack). */
#define TABULA_XD_TILE 1024

/* The accumulator of output (b, oy, ox, oc) the portable way: bias + sum over every tap of x~ w, x~ =
 * pad_value in the padding, modulo 2^32. */
static int32_t conv_acc_folded(const tabula_window *win, const int8_t *input, int32_t pad_value, const int8_t *weight,
                               const int32_t *bias, int32_t b, int32_t oy, int32_t ox, int32_t oc)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int8_t *wo = weight + oc * kh * kw * c;
    uint32_t acc = bias ? (uint32_t)bias[oc] : 0u;
    int32_t ky, kx, i;
    for (ky = 0; ky < kh; ++ky) {
        const int32_t iy = oy * win->stride_y - win->pad_top + ky * win->dilation_y;
        for (kx = 0; kx < kw; ++kx) {
            const int32_t ix = ox * win->stride_x - win->pad_left + kx * win->dilation_x;
            const int8_t *wp = wo + (ky * kw + kx) * c;
            const int inside = iy >= 0 && iy < win->h && ix >= 0 && ix < win->w;
            const int8_t *xp = inside ? input + ((b * win->h + iy) * win->w + ix) * c : 0;
            for (i = 0; i < c; ++i) {
                acc += (uint32_t)((xp ? (int32_t)xp[i] : pad_value) * (int32_t)wp[i]);
            }
        }
    }
    return tabula_u32_to_s32(acc);
}

/* Requantize n int32 accumulators acc[0..n) of whole output pixels (channel i % out_c) to int16 out. */
static void conv_requant_tile(const int32_t *acc, int32_t n, int32_t out_c, const tabula_requant *rq, int32_t ge33,
                              int16_t *out)
{
    const int32_t zp = rq->output_zp, lo = rq->out_min, hi = rq->out_max;
    int32_t p, o;
    for (p = 0; p < n; p += out_c, acc += out_c, out += out_c) {
        o = 0;
#if TABULA_HAVE_MVE
        for (; ge33 && o < out_c; o += 4) {
            const int32_t cnt = out_c - o < 4 ? out_c - o : 4;
            tabula_requant4_s8_s16_mve(cnt == 4 ? vldrwq_s32(acc + o) : vldrwq_z_s32(acc + o, vctp32q((uint32_t)cnt)),
                                       rq, o, cnt, zp, lo, hi, out + o);
        }
#endif
        for (; o < out_c; ++o) {
            TABULA_STORE_REQ32(out, o, acc[o], rq, o, zp, lo, hi, ge33, int16_t);
        }
    }
}

tabula_status tabula_conv2d_s8_s16_folded(const tabula_window *win, int32_t out_c, const int8_t *input,
                                          int32_t pad_value, const int8_t *weight, const int32_t *bias,
                                          const tabula_requant *requant, int16_t *output)
{
    int32_t acc[TABULA_XD_TILE];
    int32_t b, oy, rows, ge33;
    if (!tabula_conv_window_ok(win) || out_c < 1 || pad_value < -128 || pad_value > 127 || !requant
        || TABULA_REQUANT_INVALID_X(requant, out_c, int16_t, 0)) {
        return TABULA_ERR_ARG;
    }
    ge33 = tabula_requant_shifts_ge33(requant, out_c);
    rows = (int64_t)win->out_w * out_c <= TABULA_XD_TILE ? TABULA_XD_TILE / (win->out_w * out_c) : 0;
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; oy += rows > 0 ? rows : 1) {
            const int32_t nr = rows == 0 ? 1 : (win->out_h - oy < rows ? win->out_h - oy : rows);
            const int32_t iy0 = oy * win->stride_y - win->pad_top; /* the tile's first window row */
            const int32_t iy1 = (oy + nr - 1) * win->stride_y - win->pad_top + (win->kernel_h - 1) * win->dilation_y + 1;
            const int32_t ylo = iy0 > 0 ? iy0 : 0, yhi = iy1 < win->h ? iy1 : win->h;
            int16_t *out = output + (b * win->out_h + oy) * win->out_w * out_c;
            if (rows > 0 && ylo < yhi) {
                tabula_window sub = *win;
                sub.n = 1;
                sub.h = yhi - ylo;
                sub.out_h = nr;
                sub.pad_top = ylo - iy0;
                if (tabula_conv2d_s8_folded(&sub, out_c, input + (b * win->h + ylo) * win->w * win->c, pad_value,
                                            weight, bias, 0, acc) != TABULA_OK) {
                    return TABULA_ERR_ARG; /* not reached: the sub-window of a valid window is valid */
                }
                conv_requant_tile(acc, nr * win->out_w * out_c, out_c, requant, ge33, out);
            } else {
                int32_t r, ox, oc;
                for (r = 0; r < nr; ++r) {
                    for (ox = 0; ox < win->out_w; ++ox) {
                        for (oc = 0; oc < out_c; ++oc) {
                            const int32_t a = conv_acc_folded(win, input, pad_value, weight, bias, b, oy + r, ox, oc);
                            TABULA_STORE_REQ32(out, (r * win->out_w + ox) * out_c + oc, a, requant, oc,
                                               requant->output_zp, requant->out_min, requant->out_max, ge33, int16_t);
                        }
                    }
                }
            }
        }
    }
    return TABULA_OK;
}
