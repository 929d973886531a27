/*
 * The DSP-extension (Cortex-M4, M7, M33; the lanes: tabula_dsp.h) inner loop of DEPTHWISE_CONV2D's DSP
 * path (tabula_dw_fast, tabula_depthwise_conv2d_fast.h, which includes this file), typed by the macros
 * of tabula_depthwise_conv2d_impl.h (see its comment for the scheme).  Private to depthwise_conv2d/.
 */
#if TABULA_HAVE_DSP
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
    TABULA_DSP_PUT4(a, a0, a1, a2, a3);
}
#endif
