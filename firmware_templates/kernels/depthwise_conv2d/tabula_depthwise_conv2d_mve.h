/*
 * The Helium (MVE) helpers of DEPTHWISE_CONV2D's Helium path (tabula_dw_fast,
 * tabula_depthwise_conv2d_fast.h, which includes this file), typed by the macros of
 * tabula_depthwise_conv2d_impl.h (see its comment for the scheme).  Private to depthwise_conv2d/.
 */
#if TABULA_HAVE_MVE
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

/* The vector requantization of 4 lanes into the output type: int32 accumulators by the apply_scale_32
 * twin, int48 ones (exact in int32 here) by the apply_scale_16 twin (tabula_mve.h); the _s8_s16 /
 * _s16_s8 twins store the other element size (TABULA_DW_CROSS). */
#if TABULA_DW_WIDE && TABULA_DW_CROSS
#define TABULA_DW_REQ4 tabula_requant4_s16_s8_mve
#elif TABULA_DW_WIDE
#define TABULA_DW_REQ4 tabula_requant4_s16_mve
#elif TABULA_DW_CROSS
#define TABULA_DW_REQ4 tabula_requant4_s8_s16_mve
#else
#define TABULA_DW_REQ4 tabula_requant4_s8_mve
#endif

#if TABULA_DW_WIDE
/* The int16 vector epilogue applies (tabula_dw_store_mve, rq->vec): every shift in [17, 46]
 * (tabula_requant4_s16_mve's range) and every bias in [-2^30, 2^30), so that bias + a tap sum (|sum| <=
 * 256 * 2^22 = 2^30, TABULA_DW_FAST_TAPS taps of |x w| <= 32768 * 128) is exact in int32. */
static inline int tabula_dw_vec16_ok(const tabula_requant *rq, const int64_t *bias, int32_t oc)
{
    int32_t o;
    for (o = 0; bias && o < oc; ++o) {
        if (bias[o] < -(INT64_C(1) << 30) || bias[o] >= (INT64_C(1) << 30)) {
            return 0;
        }
    }
    return tabula_requant_s16_vec_ok(rq, oc);
}
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
        TABULA_DW_REQ4(v0, rq->requant, o0, n < 4 ? n : 4, rq->zp, rq->lo, rq->hi, (TABULA_DW_OUT_T *)output + pix + o0);
        if (n > 4) {
            TABULA_DW_REQ4(v1, rq->requant, o0 + 4, n - 4, rq->zp, rq->lo, rq->hi,
                           (TABULA_DW_OUT_T *)output + pix + o0 + 4);
        }
        return;
    }
#else
    if (rq->vec) { /* int16: 8 channels as two vectors of exact int32 sums (tabula_dw_vec16_ok) */
        const uint32x4_t lows = vidupq_n_u32(0u, 2); /* the low words of 4 int64 biases */
        const int32_t n0 = n < 4 ? n : 4;
        int32_t sums[8];
        int32x4x2_t pair;
        int32x4_t v0, v1;
        pair.val[0] = acc_e;
        pair.val[1] = acc_o;
        vst2q_s32(sums, pair); /* channel order */
        v0 = vldrwq_s32(sums);
        v1 = vldrwq_s32(sums + 4);
        if (bias) { /* |bias| < 2^30 and |sum| <= 2^30: exact in int32 */
            const int32_t *bw = (const int32_t *)(const void *)(bias + o0);
            v0 = vaddq_s32(v0, vldrwq_gather_shifted_offset_z_s32(bw, lows, vctp32q((uint32_t)n0)));
            v1 = vaddq_s32(v1, vldrwq_gather_shifted_offset_z_s32(bw + 8, lows, vctp32q((uint32_t)(n > 4 ? n - 4 : 0))));
        }
        TABULA_DW_REQ4(v0, rq->requant, o0, n0, rq->zp, rq->lo, rq->hi, (TABULA_DW_OUT_T *)output + pix + o0);
        if (n > 4) {
            TABULA_DW_REQ4(v1, rq->requant, o0 + 4, n - 4, rq->zp, rq->lo, rq->hi,
                           (TABULA_DW_OUT_T *)output + pix + o0 + 4);
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
#endif
