/*
 * The requantizing Helium path of DEPTHWISE_CONV2D (tabula_dw_mve16; tabula_depthwise_conv2d_fast.h
 * includes this file, tabula_dw_body calls it) for int8 (_s8) and int16 (a16w8: _s16, _s16_s8) inputs:
 * 16 channels per block, the input zero point folded into the block's bias, the requantization in vector
 * registers.  Private to depthwise_conv2d/.  Typed by the macros of tabula_depthwise_conv2d_impl.h
 * (TABULA_DW_T, TABULA_DW_OUT_T); not in _s8_s16 (TABULA_DW_MVE16 says where it exists).
 *
 * Taken when multiplier 1, weight_zp 0, a requant block with the vector epilogue (int8: every shift >= 33;
 * int16: tabula_dw_vec16_ok, every shift in [17, 46] and every bias in [-2^30, 2^30)) and a 3x3 kernel or
 * a line of at most TABULA_DW16_TAPS taps ((k,1), (1,k)) -- int16: on a map with at least a quarter of
 * its pixels interior (tabula_dw16_worth); other windows and maps keep tabula_dw_fast.  Channel blocks
 * outermost, then every output pixel; per block once per call:
 *   bias'[o] = bias[o] - input_zp * sum_t w[t][o]   (every tap, as CONV2D's fold_input_zp)
 *   the block's weights copied tap after tap into 16 contiguous bytes per tap (channels past C zero),
 *   each channel's multiplier m and VRSHL shift 32 - s, in the lanes' order (below).
 * Then sum_valid (x - zp) w = sum_all x~ w - zp sum_all w with x~ = x inside the input and zp in the
 * padding: an interior pixel runs every tap straight from the input (3x3 unrolled, (k,1) / (1,k) as a
 * line of taps; assembly, with the C twin beside it), a border pixel (and every pixel of a block of
 * fewer than 8 or 16 channels, through VCTP-predicated loads and stores, no scalar tail) reads a padded
 * tap from a 16-element row of zp (int16: of 0, int16 is symmetric).
 * Lanes: each half of 8 channels is loaded widened to int16 (VLDRB.S16, input and weights), VMULLB /
 * VMULLT form the exact int32 products of its even / odd channels, VADD sums them modulo 2^32 (as the
 * portable path): 12 instructions per tap per 16 MACs with the loads.  Requantization, exact with
 * tabula_requant4_s8_mve's proof: v = VRSHL(VMULH(acc, m), 32 - s) per lane (|v| < 2^30), VQMOVNB /
 * VQMOVNT narrow the even / odd lanes with saturation back into one int16x8 in channel order, + zp
 * (VQADD) and the clamp to [lo, hi] in int16 -- saturating at +-2^15 first changes nothing, as lo, hi and
 * zp are int8 -- and VSTRB.16 writes the 8 low bytes.
 * int16 input: the same with VLDRH.16 of 8 input channels (the weights still VLDRB.S16): each product |x w|
 * <= 32768 * 128 = 2^22, at most TABULA_DW16_TAPS = 64 taps (2^28) on a bias in [-2^30, 2^30), so the int32
 * lanes hold the exact int48 accumulator (no wrap).  Its requantization is tabula_requant4_s16_mve's
 * (apply_scale_16, exact for shifts in [17, 46], |v| < 2^30): v = VRSHL(VMULH(acc, m 2^16), 16 - s) per lane,
 * the same text as int8's with the block holding m 2^16 and 16 - s, then the same narrowing, + zp and clamp
 * -- saturating at +-2^15 before + zp changes nothing, as zp is 0 for int16 outputs (TABULA_ZP_MAX) and zp,
 * lo, hi are int8 for _s16_s8 -- and VSTRH.16 (_s16) or VSTRB.16 (_s16_s8: the low bytes are the values).
 */
#if TABULA_HAVE_MVE && (TABULA_DW_WIDE || !TABULA_DW_CROSS)
#define TABULA_DW_MVE16 1

/* The element types: input loads (8 channels widened or not to int16 lanes), output stores (the low
 * bytes or the halfwords of int16 lanes), and their assembly text (mnemonic, the second half's offset). */
#if TABULA_DW_WIDE
#define TABULA_DW16_LDX(p) vldrhq_s16(p)
#define TABULA_DW16_LDX_Z(p, pred) vldrhq_z_s16(p, pred)
#define TABULA_DW16_ASM_LDX "vldrh.u16"
#define TABULA_DW16_ASM_X8 "16"
#else
#define TABULA_DW16_LDX(p) vldrbq_s16(p)
#define TABULA_DW16_LDX_Z(p, pred) vldrbq_z_s16(p, pred)
#define TABULA_DW16_ASM_LDX "vldrb.s16"
#define TABULA_DW16_ASM_X8 "8"
#endif
#if TABULA_DW_WIDE && !TABULA_DW_CROSS /* int16 out */
#define TABULA_DW16_STO(p, v) vstrhq_s16(p, v)
#define TABULA_DW16_STO_P(p, v, pred) vstrhq_p_s16(p, v, pred)
#define TABULA_DW16_ASM_STO "vstrh.16"
#define TABULA_DW16_ASM_O8 "16"
#else
#define TABULA_DW16_STO(p, v) vstrbq_s16(p, v)
#define TABULA_DW16_STO_P(p, v, pred) vstrbq_p_s16(p, v, pred)
#define TABULA_DW16_ASM_STO "vstrb.16"
#define TABULA_DW16_ASM_O8 "8"
#endif

/* At most this many taps (the block's weight copy lives on the stack: 16 bytes per tap). */
#define TABULA_DW16_TAPS 64

/* One block of 16 channels: per lane group g (0: channels 0, 2, 4, 6 of the block; 1: 1, 3, 5, 7; 2: 8,
 * 10, 12, 14; 3: 9, 11, 13, 15), lane i at [4 g + i]: the folded bias, the multiplier and 32 - shift
 * (int16 input: m 2^16 and 16 - shift); then the weights, 16 bytes per tap, in channel order. */
typedef struct {
    int32_t bias[16], m[16], sh[16]; /* bytes 0, 64, 128 (the assembly's offsets) */
    int16_t lo[8], hi[8];            /* 192, 208: the output's clamp bounds */
    int8_t w[16 * TABULA_DW16_TAPS]; /* 224 */
} tabula_dw16_blk;

/* The channel of the block at lane slot j (4 g + i, as tabula_dw16_blk). */
static inline int32_t tabula_dw16_lane_ch(int32_t j)
{
    return ((j >> 3) << 3) + 2 * (j & 3) + ((j >> 2) & 1);
}

/* Fill blk for channels [c0, c0 + nb) of nt taps (weights [t][c]). */
static void tabula_dw16_prep(tabula_dw16_blk *blk, const int8_t *weight, int32_t c, int32_t nt, int32_t c0, int32_t nb,
                             const TABULA_DW_ACC_T *bias, int32_t input_zp, const tabula_requant *rq)
{
    const int16x8_t zp = vdupq_n_s16((int16_t)input_zp);
    int16x8_t s0 = vdupq_n_s16(0), s1 = vdupq_n_s16(0);
    int32_t j, t;
    for (j = 0; j < 16; ++j) {
        const int32_t o = c0 + tabula_dw16_lane_ch(j);
        blk->bias[j] = (o < c0 + nb && bias) ? (int32_t)bias[o] : 0; /* int16: within 2^30 */
#if TABULA_DW_WIDE /* m < 2^15 (the int48 block's limit): m 2^16 is a VMULH operand */
        blk->m[j] = o < c0 + nb ? (int32_t)((uint32_t)tabula_requant_m(rq, o) << 16) : 0;
        blk->sh[j] = o < c0 + nb ? 16 - tabula_requant_s(rq, o) : 0;
#else
        blk->m[j] = o < c0 + nb ? tabula_requant_m(rq, o) : 0;
        blk->sh[j] = o < c0 + nb ? 32 - tabula_requant_s(rq, o) : 0;
#endif
    }
    vstrhq_s16(blk->lo, vdupq_n_s16((int16_t)rq->out_min));
    vstrhq_s16(blk->hi, vdupq_n_s16((int16_t)rq->out_max));
    for (t = 0; t < nt; ++t) {
        const mve_pred16_t p = vctp8q((uint32_t)nb);
        const int8x16_t wv = vldrbq_z_s8(weight + t * c + c0, p);
        vstrbq_s8(blk->w + 16 * t, wv);
        s0 = vaddq_s16(s0, vldrbq_s16(blk->w + 16 * t)); /* |sum| <= 64 * 128: exact in int16 */
        s1 = vaddq_s16(s1, vldrbq_s16(blk->w + 16 * t + 8));
    }
    /* bias - zp * sum w, modulo 2^32 as the portable path (zp * sum w is exact: |.| <= 2^21) */
    vstrwq_s32(blk->bias, vsubq_s32(vldrwq_s32(blk->bias), vmullbq_int_s16(s0, zp)));
    vstrwq_s32(blk->bias + 4, vsubq_s32(vldrwq_s32(blk->bias + 4), vmulltq_int_s16(s0, zp)));
    vstrwq_s32(blk->bias + 8, vsubq_s32(vldrwq_s32(blk->bias + 8), vmullbq_int_s16(s1, zp)));
    vstrwq_s32(blk->bias + 12, vsubq_s32(vldrwq_s32(blk->bias + 12), vmulltq_int_s16(s1, zp)));
}

/* The accumulators of one pixel: a[g] for the lane groups of tabula_dw16_blk. */
typedef struct {
    int32x4_t a0, a1, a2, a3;
} tabula_dw16_acc;

/* A pixel's accumulators, started at the block's folded bias. */
static inline tabula_dw16_acc tabula_dw16_init(const tabula_dw16_blk *blk)
{
    tabula_dw16_acc acc;
    acc.a0 = vldrwq_s32(blk->bias);
    acc.a1 = vldrwq_s32(blk->bias + 4);
    acc.a2 = vldrwq_s32(blk->bias + 8);
    acc.a3 = vldrwq_s32(blk->bias + 12);
    return acc;
}

/* acc += the products of one tap: input x (nh halves of 8 channels, unpredicated), weights w. */
static inline __attribute__((always_inline)) void tabula_dw16_tap(tabula_dw16_acc *acc, const TABULA_DW_T *x,
                                                                  const int8_t *w, int nh)
{
    const int16x8_t x0 = TABULA_DW16_LDX(x), w0 = vldrbq_s16(w);
    acc->a0 = vaddq_s32(acc->a0, vmullbq_int_s16(x0, w0));
    acc->a1 = vaddq_s32(acc->a1, vmulltq_int_s16(x0, w0));
    if (nh == 2) {
        const int16x8_t x1 = TABULA_DW16_LDX(x + 8), w1 = vldrbq_s16(w + 8);
        acc->a2 = vaddq_s32(acc->a2, vmullbq_int_s16(x1, w1));
        acc->a3 = vaddq_s32(acc->a3, vmulltq_int_s16(x1, w1));
    }
}

/* The same with the input loads predicated (p0, p1: the halves' channels; a padded lane reads 0, and its
 * weight is 0). */
static inline void tabula_dw16_tap_z(tabula_dw16_acc *acc, const TABULA_DW_T *x, const int8_t *w, mve_pred16_t p0,
                                     mve_pred16_t p1)
{
    const int16x8_t x0 = TABULA_DW16_LDX_Z(x, p0), w0 = vldrbq_s16(w);
    const int16x8_t x1 = TABULA_DW16_LDX_Z(x + 8, p1), w1 = vldrbq_s16(w + 8);
    acc->a0 = vaddq_s32(acc->a0, vmullbq_int_s16(x0, w0));
    acc->a1 = vaddq_s32(acc->a1, vmulltq_int_s16(x0, w0));
    acc->a2 = vaddq_s32(acc->a2, vmullbq_int_s16(x1, w1));
    acc->a3 = vaddq_s32(acc->a3, vmulltq_int_s16(x1, w1));
}

/* An interior pixel of a full block (nh halves, no predicate): kh x kw taps at x + ky rstep + kx cstep
 * (the compiler unrolls constant kh, kw), then the requantized store at out. */
static inline __attribute__((always_inline)) void tabula_dw16_pixel(const tabula_dw16_blk *blk, const TABULA_DW_T *x,
                                                                    int32_t kh, int32_t kw, int32_t rstep,
                                                                    int32_t cstep, int nh, int32_t zp, int16x8_t lo,
                                                                    int16x8_t hi, TABULA_DW_OUT_T *out)
{
    tabula_dw16_acc acc;
    const int8_t *w = blk->w;
    int32_t ky, kx;
    acc = tabula_dw16_init(blk);
#pragma GCC unroll 3
    for (ky = 0; ky < kh; ++ky, x += rstep) {
        const TABULA_DW_T *xr = x;
#pragma GCC unroll 3
        for (kx = 0; kx < kw; ++kx, xr += cstep, w += 16) {
            tabula_dw16_tap(&acc, xr, w, nh);
        }
    }
    TABULA_DW16_STO(out, tabula_requant8_eo_s8_mve(acc.a0, acc.a1, blk->m, blk->sh, zp, lo, hi));
    if (nh == 2) {
        TABULA_DW16_STO(out + 8, tabula_requant8_eo_s8_mve(acc.a2, acc.a3, blk->m + 8, blk->sh + 8, zp, lo, hi));
    }
}

#if TABULA_USE_ASM
/* The assembly of tabula_dw16_run (its C is the twin, -DTABULA_NO_ASM=1): q0..q3 the lane groups'
 * accumulators, q4..q6 scratch; per tap of nh halves: per half VLDRB.S16 (int16 input: VLDRH.16) of the
 * input, VLDRB.S16 of the weights, VMULLB, VADD, VMULLT, VADD, then one ADD to the next tap; per pixel the
 * requantization of tabula_requant8_eo_s8_mve and 8-element stores.  Steps and offsets are in bytes.
 * (gcc 12 compiles the C with the block's weights hoisted out of the pixel loop into stack slots and
 * reloaded through an address add each: 2 to 3 times the instructions.) */
#define TABULA_DW16_HALF(xo, ae, ao, wpost)                                                               \
    TABULA_DW16_ASM_LDX " q4, [%[rt], #" xo "]\n\t"                                                                 \
    "vldrb.s16 q5, [%[rw]], #" wpost "\n\t"                                                              \
    "vmullb.s16 q6, q4, q5\n\t"                                                                          \
    "vadd.i32 " ae ", " ae ", q6\n\t"                                                                    \
    "vmullt.s16 q6, q4, q5\n\t"                                                                          \
    "vadd.i32 " ao ", " ao ", q6\n\t"
#define TABULA_DW16_MAC2 TABULA_DW16_HALF("0", "q0", "q1", "8") TABULA_DW16_HALF(TABULA_DW16_ASM_X8, "q2", "q3", "8")
#define TABULA_DW16_MAC1 TABULA_DW16_HALF("0", "q0", "q1", "16")
#define TABULA_DW16_TAP2 TABULA_DW16_MAC2 "add %[rt], %[rt], %[cstep]\n\t"
#define TABULA_DW16_TAP1 TABULA_DW16_MAC1 "add %[rt], %[rt], %[cstep]\n\t"
#define TABULA_DW16_RQ(ae, ao, m_e, m_o, s_e, s_o, oo)                                                    \
    "vldrw.u32 q4, [%[blk], #" m_e "]\n\t"                                                               \
    "vmulh.s32 " ae ", " ae ", q4\n\t"                                                                   \
    "vldrw.u32 q4, [%[blk], #" s_e "]\n\t"                                                               \
    "vrshl.s32 " ae ", " ae ", q4\n\t"                                                                   \
    "vldrw.u32 q4, [%[blk], #" m_o "]\n\t"                                                               \
    "vmulh.s32 " ao ", " ao ", q4\n\t"                                                                   \
    "vldrw.u32 q4, [%[blk], #" s_o "]\n\t"                                                               \
    "vrshl.s32 " ao ", " ao ", q4\n\t"                                                                   \
    "vqmovnb.s32 q4, " ae "\n\t"                                                                         \
    "vqmovnt.s32 q4, " ao "\n\t"                                                                         \
    "vqadd.s16 q4, q4, %[zp]\n\t"                                                                        \
    "vldrh.u16 q5, [%[blk], #192]\n\t"                                                                   \
    "vmax.s16 q4, q4, q5\n\t"                                                                            \
    "vldrh.u16 q5, [%[blk], #208]\n\t"                                                                   \
    "vmin.s16 q4, q4, q5\n\t"                                                                            \
    TABULA_DW16_ASM_STO " q4, [%[out], #" oo "]\n\t"
#define TABULA_DW16_INIT2 "vldrw.u32 q0, [%[blk]]\n\t" "vldrw.u32 q1, [%[blk], #16]\n\t" \
    "vldrw.u32 q2, [%[blk], #32]\n\t" "vldrw.u32 q3, [%[blk], #48]\n\t" "add %[rw], %[blk], #224\n\t"
#define TABULA_DW16_INIT1 "vldrw.u32 q0, [%[blk]]\n\t" "vldrw.u32 q1, [%[blk], #16]\n\t" \
    "add %[rw], %[blk], #224\n\t"
#define TABULA_DW16_STORE2 TABULA_DW16_RQ("q0", "q1", "64", "80", "128", "144", "0") \
    TABULA_DW16_RQ("q2", "q3", "96", "112", "160", "176", TABULA_DW16_ASM_O8)
#define TABULA_DW16_STORE1 TABULA_DW16_RQ("q0", "q1", "64", "80", "128", "144", "0")
#define TABULA_DW16_ROW(tap) "mov %[rt], %[rr]\n\t" tap tap tap "add %[rr], %[rr], %[rstep]\n\t"
/* n >= 1 pixels of a run, body the taps of one: 3x3 unrolled (rr the row), or a line of k taps cstep
 * apart ((k,1) / (1,k); k in the rstep operand, rr its counter). */
#define TABULA_DW16_BODY3x3(tap) "mov %[rr], %[x]\n\t" TABULA_DW16_ROW(tap) TABULA_DW16_ROW(tap) TABULA_DW16_ROW(tap)
#define TABULA_DW16_BODYLINE(tap) "mov %[rt], %[x]\n\t" "mov %[rr], %[rstep]\n" \
    "2:\n\t" tap "subs %[rr], %[rr], #1\n\t" "bne 2b\n\t"
#define TABULA_DW16_ASMRUN(init, body, store)                                                             \
    do {                                                                                                  \
        const void *rw, *rr, *rt;                                                                         \
        __asm__ volatile("dls lr, %[n]\n"                                                                 \
                         "1:\n\t" init body store                                                         \
                         "add %[out], %[out], %[ostep]\n\t"                                               \
                         "add %[x], %[x], %[xstep]\n\t"                                                   \
                         "le lr, 1b\n\t"                                                                  \
                         : [x] "+r"(x), [out] "+l"(out), [rw] "=&l"(rw), [rr] "=&r"(rr), [rt] "=&l"(rt)   \
                         : [n] "r"(n), [blk] "r"(blk), [xstep] "r"(xstep), [ostep] "r"(ostep),            \
                           [rstep] "r"(rstep), [cstep] "r"(cstep), [zp] "r"(zp)                           \
                         : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "memory", "cc");               \
    } while (0)
/* One pixel over nt >= 1 taps listed as input pointers at tp. */
#define TABULA_DW16_ASMLIST(init, mac, store)                                                             \
    do {                                                                                                  \
        const void *rw, *rt;                                                                              \
        __asm__ volatile(init                                                                             \
                         "1:\n\t"                                                                         \
                         "ldr %[rt], [%[tp]], #4\n\t" mac                                                 \
                         "subs %[nt], %[nt], #1\n\t"                                                       \
                         "bne 1b\n\t" store                                                               \
                         : [tp] "+r"(tp), [nt] "+r"(nt), [rw] "=&l"(rw), [rt] "=&l"(rt)                   \
                         : [blk] "r"(blk), [zp] "r"(zp), [out] "l"(out)                                   \
                         : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "memory", "cc");                     \
    } while (0)
#endif

/* One pixel of a full block (nh halves) over nt >= 1 taps listed as input pointers at tp (a tap in the
 * padding points at the zp row). */
static __attribute__((noinline)) void tabula_dw16_list(const tabula_dw16_blk *blk, const TABULA_DW_T *const *tp,
                                                       int32_t nt, int nh, int32_t zp, TABULA_DW_OUT_T *out)
{
#if TABULA_USE_ASM
    if (nh == 2) {
        TABULA_DW16_ASMLIST(TABULA_DW16_INIT2, TABULA_DW16_MAC2, TABULA_DW16_STORE2);
    } else {
        TABULA_DW16_ASMLIST(TABULA_DW16_INIT1, TABULA_DW16_MAC1, TABULA_DW16_STORE1);
    }
#else
    const int16x8_t lo = vldrhq_s16(blk->lo), hi = vldrhq_s16(blk->hi);
    const int8_t *w = blk->w;
    tabula_dw16_acc acc;
    int32_t t;
    acc = tabula_dw16_init(blk);
    for (t = 0; t < nt; ++t, w += 16) {
        if (nh == 2) {
            tabula_dw16_tap(&acc, tp[t], w, 2);
        } else {
            tabula_dw16_tap(&acc, tp[t], w, 1);
        }
    }
    TABULA_DW16_STO(out, tabula_requant8_eo_s8_mve(acc.a0, acc.a1, blk->m, blk->sh, zp, lo, hi));
    if (nh == 2) {
        TABULA_DW16_STO(out + 8, tabula_requant8_eo_s8_mve(acc.a2, acc.a3, blk->m + 8, blk->sh + 8, zp, lo, hi));
    }
#endif
}

/* One row of interior pixels [ox0, ox1) of a full block: x at pixel ox0, xstep between pixels;
 * kh, kw: 3 x 3 or 1 x k (a line of k taps cstep apart).  Out of line: the assembly wants 13 registers. */
static __attribute__((noinline)) void tabula_dw16_run(const tabula_dw16_blk *blk, const TABULA_DW_T *x,
                                                                  int32_t xstep, int32_t n, int32_t kh, int32_t kw,
                                                                  int32_t rstep, int32_t cstep, int nh, int32_t zp,
                                                                  int16x8_t lo, int16x8_t hi, TABULA_DW_OUT_T *out,
                                                                  int32_t ostep)
{
#if TABULA_USE_ASM
    (void)lo;
    (void)hi;
    if (n < 1) {
        return;
    }
    /* the assembly steps in bytes */
    xstep *= (int32_t)sizeof(TABULA_DW_T);
    rstep *= (int32_t)sizeof(TABULA_DW_T);
    cstep *= (int32_t)sizeof(TABULA_DW_T);
    ostep *= (int32_t)sizeof(TABULA_DW_OUT_T);
    if (kh == 3 && nh == 2) {
        TABULA_DW16_ASMRUN(TABULA_DW16_INIT2, TABULA_DW16_BODY3x3(TABULA_DW16_TAP2), TABULA_DW16_STORE2);
    } else if (kh == 3) {
        TABULA_DW16_ASMRUN(TABULA_DW16_INIT1, TABULA_DW16_BODY3x3(TABULA_DW16_TAP1), TABULA_DW16_STORE1);
    } else {
        rstep = kw; /* the line's length */
        if (nh == 2) {
            TABULA_DW16_ASMRUN(TABULA_DW16_INIT2, TABULA_DW16_BODYLINE(TABULA_DW16_TAP2), TABULA_DW16_STORE2);
        } else {
            TABULA_DW16_ASMRUN(TABULA_DW16_INIT1, TABULA_DW16_BODYLINE(TABULA_DW16_TAP1), TABULA_DW16_STORE1);
        }
    }
#else
    int32_t i;
    for (i = 0; i < n; ++i, x += xstep, out += ostep) {
        tabula_dw16_pixel(blk, x, kh, kw, rstep, cstep, nh, zp, lo, hi, out);
    }
#endif
}

/* Any pixel of a block of fewer than 8 or 16 channels: a tap outside the input reads the zp row pad
 * (16 bytes), the input loads and the stores predicated by the block's channels (p0, p1). */
static void tabula_dw16_edge(const tabula_dw16_blk *blk, const tabula_window *win, const TABULA_DW_T *xb, int32_t b,
                             int32_t iy0, int32_t ix0, const TABULA_DW_T *pad, mve_pred16_t p0, mve_pred16_t p1,
                             int32_t zp, int16x8_t lo, int16x8_t hi, TABULA_DW_OUT_T *out)
{
    const int32_t h = win->h, w = win->w, c = win->c;
    const int8_t *wt = blk->w;
    tabula_dw16_acc acc;
    int32_t ky, kx;
    acc = tabula_dw16_init(blk);
    for (ky = 0; ky < win->kernel_h; ++ky) {
        const int32_t iy = iy0 + ky * win->dilation_y;
        for (kx = 0; kx < win->kernel_w; ++kx, wt += 16) {
            const int32_t ix = ix0 + kx * win->dilation_x;
            const TABULA_DW_T *x = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? xb + ((b * h + iy) * w + ix) * c : pad;
            tabula_dw16_tap_z(&acc, x, wt, p0, p1);
        }
    }
    TABULA_DW16_STO_P(out, tabula_requant8_eo_s8_mve(acc.a0, acc.a1, blk->m, blk->sh, zp, lo, hi), p0);
    TABULA_DW16_STO_P(out + 8, tabula_requant8_eo_s8_mve(acc.a2, acc.a3, blk->m + 8, blk->sh + 8, zp, lo, hi), p1);
}

/* A border pixel of a full block (nh halves): its taps listed as pointers -- row ky at rowp[ky] (NULL:
 * in the padding), column ix0 + kx dx -- or the zp row pad, then tabula_dw16_list. */
static inline void tabula_dw16_border(const tabula_dw16_blk *blk, const TABULA_DW_T *const *rowp, int32_t kh,
                                      int32_t kw, int32_t ix0, int32_t dx, int32_t w, int32_t c,
                                      const TABULA_DW_T *pad, int nh, int32_t zp, TABULA_DW_OUT_T *out)
{
    const TABULA_DW_T *tp[TABULA_DW16_TAPS];
    int32_t col[TABULA_DW16_TAPS]; /* per kx: the element offset of its column, or -1 in the padding */
    int32_t ky, kx, t = 0;
    for (kx = 0; kx < kw; ++kx) {
        const int32_t ix = ix0 + kx * dx;
        col[kx] = ix >= 0 && ix < w ? ix * c : -1;
    }
    for (ky = 0; ky < kh; ++ky) {
        const TABULA_DW_T *r = rowp[ky];
        for (kx = 0; kx < kw; ++kx, ++t) {
            tp[t] = r && col[kx] >= 0 ? r + col[kx] : pad;
        }
    }
    tabula_dw16_list(blk, tp, t, nh, zp, out);
}

/* The interior columns [*a, *b) of the output: windows wholly inside along one axis (i0 = o s - p). */
static inline void tabula_dw16_inside(int32_t out_n, int32_t s, int32_t p, int32_t k, int32_t d, int32_t size,
                                      int32_t *a, int32_t *b)
{
    int32_t lo = 0, hi = out_n;
    while (lo < out_n && lo * s - p < 0) {
        ++lo;
    }
    while (hi > lo && (hi - 1) * s - p + (k - 1) * d >= size) {
        --hi;
    }
    *a = lo;
    *b = hi;
}

/* int16 input: 1 when at least a quarter of the output pixels have their whole window inside the input.
 * On smaller maps (3x3 pad 1: 1 of 9) tabula_dw_fast is cheaper -- it lists a border pixel's real taps
 * once per clipped window, where this path walks every tap of a border pixel (its padded ones read zeros)
 * and prepares each block once per call -- and gives the same bits. */
static inline int tabula_dw16_worth(const tabula_window *win)
{
    int32_t ya, yb, xa, xb;
    tabula_dw16_inside(win->out_h, win->stride_y, win->pad_top, win->kernel_h, win->dilation_y, win->h, &ya, &yb);
    tabula_dw16_inside(win->out_w, win->stride_x, win->pad_left, win->kernel_w, win->dilation_x, win->w, &xa, &xb);
    return (int64_t)(yb - ya) * (xb - xa) * 4 >= (int64_t)win->out_h * win->out_w;
}

/* The path (see the top of this file): multiplier 1, weight_zp 0, rq with the vector epilogue (int8: every
 * shift >= 33; int16: tabula_dw_vec16_ok), kernel_h * kernel_w <= TABULA_DW16_TAPS.  Out of line: inlined
 * into tabula_dw_body, its row loop cost about 35 instructions more per block row (int16). */
static __attribute__((noinline)) void tabula_dw_mve16(const tabula_window *win, const TABULA_DW_T *input,
                                                      int32_t input_zp, const int8_t *weight,
                                                      const TABULA_DW_ACC_T *bias, const tabula_requant *rq,
                                                      TABULA_DW_OUT_T *output)
{
    const int32_t c = win->c, kh = win->kernel_h, kw = win->kernel_w, oh = win->out_h, ow = win->out_w;
    const int32_t sy = win->stride_y, sx = win->stride_x, rstep = win->dilation_y * win->w * c;
    const int32_t cstep = win->dilation_x * c, zp = rq->output_zp;
    const int16x8_t lo = vdupq_n_s16((int16_t)rq->out_min), hi = vdupq_n_s16((int16_t)rq->out_max);
    TABULA_DW_T pad[16];
    tabula_dw16_blk blk;
    int32_t c0, b, oy, ox, ky, ya, yb, xa, xb;
    tabula_dw16_inside(oh, sy, win->pad_top, kh, win->dilation_y, win->h, &ya, &yb);
    tabula_dw16_inside(ow, sx, win->pad_left, kw, win->dilation_x, win->w, &xa, &xb);
    for (ox = 0; ox < 16; ++ox) {
        pad[ox] = (TABULA_DW_T)input_zp;
    }
    for (c0 = 0; c0 < c; c0 += 16) {
        const int32_t nb = c - c0 < 16 ? c - c0 : 16;
        const int nh = nb > 8 ? 2 : 1, full = nb == 8 || nb == 16;
        const mve_pred16_t p0 = vctp16q((uint32_t)nb), p1 = vctp16q((uint32_t)(nb > 8 ? nb - 8 : 0));
        tabula_dw16_prep(&blk, weight, c, kh * kw, c0, nb, bias, input_zp, rq);
        for (b = 0; b < win->n; ++b) {
            for (oy = 0; oy < oh; ++oy) {
                const int32_t iy0 = oy * sy - win->pad_top;
                TABULA_DW_OUT_T *orow = output + (b * oh + oy) * ow * c + c0;
                const int inside = oy >= ya && oy < yb && xa < xb;
                const int32_t e0 = inside ? xa : ow; /* the border columns before the interior run */
                const TABULA_DW_T *rowp[TABULA_DW16_TAPS]; /* per kernel row: the input row, NULL in the padding */
                if (!full) {
                    for (ox = 0; ox < ow; ++ox) {
                        tabula_dw16_edge(&blk, win, input + c0, b, iy0, ox * sx - win->pad_left, pad, p0, p1, zp, lo,
                                         hi, orow + ox * c);
                    }
                    continue;
                }
                for (ky = 0; ky < kh; ++ky) {
                    const int32_t iy = iy0 + ky * win->dilation_y;
                    rowp[ky] = iy >= 0 && iy < win->h ? input + (b * win->h + iy) * win->w * c + c0 : 0;
                }
                for (ox = 0; ox < e0; ++ox) {
                    tabula_dw16_border(&blk, rowp, kh, kw, ox * sx - win->pad_left, win->dilation_x, win->w, c, pad,
                                       nh, zp, orow + ox * c);
                }
                if (!inside) {
                    continue;
                }
                {
                    const TABULA_DW_T *x = input + ((b * win->h + iy0) * win->w + xa * sx - win->pad_left) * c + c0;
                    const int32_t n = xb - xa, xstep = sx * c;
                    TABULA_DW_OUT_T *o = orow + xa * c;
                    if (kh == 3 && kw == 3) {
                        if (nh == 2) {
                            tabula_dw16_run(&blk, x, xstep, n, 3, 3, rstep, cstep, 2, zp, lo, hi, o, c);
                        } else {
                            tabula_dw16_run(&blk, x, xstep, n, 3, 3, rstep, cstep, 1, zp, lo, hi, o, c);
                        }
                    } else if (kw == 1 || kh == 1) { /* (k, 1) / (1, k): one line of taps */
                        const int32_t k = kw == 1 ? kh : kw, step = kw == 1 ? rstep : cstep;
                        if (nh == 2) {
                            tabula_dw16_run(&blk, x, xstep, n, 1, k, 0, step, 2, zp, lo, hi, o, c);
                        } else {
                            tabula_dw16_run(&blk, x, xstep, n, 1, k, 0, step, 1, zp, lo, hi, o, c);
                        }
                    }
                }
                for (ox = xb; ox < ow; ++ox) {
                    tabula_dw16_border(&blk, rowp, kh, kw, ox * sx - win->pad_left, win->dilation_x, win->w, c, pad,
                                       nh, zp, orow + ox * c);
                }
            }
        }
    }
}
#endif
