/*
 * The DSP-extension path of DEPTHWISE_CONV2D (Cortex-M4, M7, M33; the lanes: tabula_dsp.h), typed by
 * the macros of tabula_depthwise_conv2d_impl.h (which includes this file; see its comment for the
 * scheme).  Private to depthwise_conv2d/.
 */
#if TABULA_HAVE_DSP
/* At most this many taps per window on the DSP path (the tap list lives on the stack, 2 KiB; an int16
 * tap sum of 256 products |x w| <= 2^22 stays below 2^31). */
#define TABULA_DW_DSP_TAPS 256

/* Channels o .. o + 3 of one pixel over its real taps (off: per tap the input and weight byte offsets
 * from xb, wb, at least one tap, ended by an input offset of -1), 13 instructions per tap (4 MACs) with
 * the loop, in 12 registers.  int8: a[i] += (x - input_zp) w, lanes [c0, c2] and [c1, c3] of the input
 * word (SXTAB16, + kx2 = -input_zp) and of the weight word (SXTB16), SMLABB / SMLATT per channel.
 * int16: a[i] += x w, the input's natural pairs [x0, x1], [x2, x3] against the weight lanes [w0, w2],
 * [w1, w3] (SXTB16) by SMLABB, SMLATB, SMLABT, SMLATT; each tap sum is exact in 32 bits (at most 256
 * products |x w| <= 2^22). */
static inline void tabula_dw_dsp_quad(const TABULA_DW_T *xb, const int8_t *wb, const int32_t *off, int32_t kx2,
                                      int32_t a[4])
{
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
#if TABULA_USE_ASM && !TABULA_DW_WIDE
    int32_t ox, ow, u, v;
    __asm__ volatile(
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "1:\n\t"
        "ldr     %[u], [%[xb], %[ox]]\n\t"
        "ldr     %[v], [%[wb], %[ow]]\n\t"
        "sxtab16 %[ox], %[kx2], %[u]\n\t"
        "sxtab16 %[u], %[kx2], %[u], ror #8\n\t"
        "sxtb16  %[ow], %[v]\n\t"
        "sxtb16  %[v], %[v], ror #8\n\t"
        "smlabb  %[a0], %[ox], %[ow], %[a0]\n\t"
        "smlatt  %[a2], %[ox], %[ow], %[a2]\n\t"
        "smlabb  %[a1], %[u], %[v], %[a1]\n\t"
        "smlatt  %[a3], %[u], %[v], %[a3]\n\t"
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "cmp     %[ox], #0\n\t"
        "bge     1b"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [off] "+r"(off), [ox] "=&r"(ox),
          [ow] "=&r"(ow), [u] "=&r"(u), [v] "=&r"(v)
        : [xb] "r"(xb), [wb] "r"(wb), [kx2] "r"(kx2)
        : "memory", "cc");
#elif TABULA_USE_ASM
    int32_t ox, ow, u, v, t;
    __asm__ volatile(
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "1:\n\t"
        "add     %[ox], %[xb], %[ox]\n\t"
        "ldr     %[u], [%[ox]]\n\t"
        "ldr     %[t], [%[ox], #4]\n\t"
        "ldr     %[v], [%[wb], %[ow]]\n\t"
        "sxtb16  %[ow], %[v]\n\t"
        "sxtb16  %[v], %[v], ror #8\n\t"
        "smlabb  %[a0], %[u], %[ow], %[a0]\n\t"
        "smlatb  %[a1], %[u], %[v], %[a1]\n\t"
        "smlabt  %[a2], %[t], %[ow], %[a2]\n\t"
        "smlatt  %[a3], %[t], %[v], %[a3]\n\t"
        "ldrd    %[ox], %[ow], [%[off]], #8\n\t"
        "cmp     %[ox], #0\n\t"
        "bge     1b"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [off] "+r"(off), [ox] "=&r"(ox),
          [ow] "=&r"(ow), [u] "=&r"(u), [v] "=&r"(v), [t] "=&r"(t)
        : [xb] "r"(xb), [wb] "r"(wb)
        : "memory", "cc");
#elif !TABULA_DW_WIDE /* the C twin: the same SMLABB / SMLATT sums */
    for (; off[0] >= 0; off += 2) {
        const int32_t x = tabula_dsp_ld4(xb + off[0]), w = tabula_dsp_ld4(wb + off[1]);
        const int32_t xe = tabula_dsp_even(kx2, x), xo = tabula_dsp_odd(kx2, x);
        const int32_t we = __sxtb16(w), wo = __sxtb16(tabula_dsp_ror8(w));
        a0 = __smlabb(xe, we, a0);
        a2 = __smlatt(xe, we, a2);
        a1 = __smlabb(xo, wo, a1);
        a3 = __smlatt(xo, wo, a3);
    }
#else /* the C twin: the same SMLAxy sums */
    for (; off[0] >= 0; off += 2) {
        const int8_t *x = (const int8_t *)(const void *)xb + off[0];
        const int32_t u = tabula_dsp_ld4(x), t = tabula_dsp_ld4(x + 4), w = tabula_dsp_ld4(wb + off[1]);
        const int32_t we = __sxtb16(w), wo = __sxtb16(tabula_dsp_ror8(w));
        a0 = __smlabb(u, we, a0);
        a1 = __smlatb(u, wo, a1);
        a2 = __smlabt(t, we, a2);
        a3 = __smlatt(t, wo, a3);
    }
#endif
#if TABULA_DW_WIDE
    (void)kx2; /* int16 is symmetric */
#endif
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* The DSP path (weight_zp 0, multiplier 1, at most TABULA_DW_DSP_TAPS taps; see tabula_dsp.h for the
 * lanes): per output pixel its real taps, listed once as byte offsets from the first real tap (rebuilt
 * only when the clipped window changes, as on the Helium path); per block of 4 channels
 * tabula_dw_dsp_quad; the last C % 4 channels one at a time.  Padded taps are skipped as on the
 * portable path.  int8: the bias starts the sums, modulo 2^32 as there; int16: the tap sums (exact in
 * 32 bits) are added to the 64-bit bias, as the Helium path does. */
static void tabula_dw_dsp(const tabula_window *win, const TABULA_DW_T *input, int32_t input_zp, const int8_t *weight,
                          const TABULA_DW_ACC_T *bias, const tabula_dw_rq *rq, void *output)
{
    const int32_t h = win->h, w = win->w, c = win->c, kh = win->kernel_h, kw = win->kernel_w;
    const int32_t dy = win->dilation_y, dx = win->dilation_x;
    const int32_t kx2 = tabula_dsp_k2(input_zp), xs = (int32_t)sizeof(TABULA_DW_T);
#if !TABULA_DW_WIDE
    const int32_t fast = rq->requant ? tabula_requant_shifts_ge33(rq->requant, c) : 0, esize = rq->requant ? 1 : 4;
#endif
    int32_t off[2 * TABULA_DW_DSP_TAPS + 2]; /* per real tap: input, weight byte offset; then -1 */
    int32_t nt = 0, cy0 = -1, cy1 = -1, cx0 = -1, cx1 = -1;
    int32_t b, oy, ox, o, t;
    for (b = 0; b < win->n; ++b) {
        for (oy = 0; oy < win->out_h; ++oy) {
            const int32_t iy0 = oy * win->stride_y - win->pad_top;
            int32_t ky0, ky1;
            tabula_dw_taps(iy0, kh, dy, h, &ky0, &ky1);
            for (ox = 0; ox < win->out_w; ++ox) {
                const int32_t ix0 = ox * win->stride_x - win->pad_left;
                const int32_t pix = ((b * win->out_h + oy) * win->out_w + ox) * c;
#if !TABULA_DW_WIDE
                void *const y = (int8_t *)output + pix * esize; /* the pixel's first output element */
#endif
                const TABULA_DW_T *xb;
                const int8_t *wb;
                int32_t kx0, kx1;
                TABULA_DW_PIXEL_TAPS(o, c, c * xs, c, 1)
                xb = input + ((b * h + iy0 + ky0 * dy) * w + ix0 + kx0 * dx) * c;
                wb = weight + (ky0 * kw + kx0) * c;
                for (o = 0; o + 4 <= c; o += 4) {
                    int32_t a[4];
#if !TABULA_DW_WIDE
                    a[0] = bias ? bias[o] : 0;
                    a[1] = bias ? bias[o + 1] : 0;
                    a[2] = bias ? bias[o + 2] : 0;
                    a[3] = bias ? bias[o + 3] : 0;
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
            }
        }
    }
}
#endif
