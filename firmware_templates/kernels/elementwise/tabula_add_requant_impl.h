/*
 * One body for the fused ADD / SUB of two activations with their requantization (codegen's
 * ADD_REQUANT; contract: manifest.toml, add_requant and add_requant mixed; Python twin: the IR sequence
 * it replaces, run by tabula.reference -- RESCALE a, RESCALE b, ADD or SUB, RESCALE [, CLAMP]).
 * The variant file elementwise/tabula_add_requant_<t>.c (or _<ta>_<tb>_<to>.c) defines, then includes
 * this file:
 *     TABULA_FN  the kernel's name
 *     TABULA_T   int8_t or int16_t: the type of a, b and the output, or
 *     TABULA_TA, TABULA_TB, TABULA_TO  int8_t or int16_t each: the types of a, b and the output (each
 *                defaults to TABULA_T)
 *
 * Per element, exactly the sequence's arithmetic (TOSA 1.0 RESCALE, single rounding, half toward
 * +infinity; ADD/SUB int32):
 *     ta = sat32(apply_scale_32(a - a_zp, a_m, a_s));  tb likewise
 *     t  = ta + tb  (ta - tb when subtract), modulo 2^32 (the lowering proves |t| <= 2^28)
 *     out = clamp(apply_scale_32(t, m, s) + output_zp, out_min, out_max)
 * The int32 terms never reach memory: no int32 tensor in the arena, one pass over the elements.
 * An int8 input with count >= TABULA_ADD_RQ_TABLE_MIN: its term takes 256 values, so it is tabulated
 * once per call (an int32 [256] array on the stack, the same function evaluated) and costs a load per
 * element; an int16 input's term is computed per element.
 */
#if !defined(TABULA_FN) || (!defined(TABULA_T) && !(defined(TABULA_TA) && defined(TABULA_TB) && defined(TABULA_TO)))
#error "define TABULA_FN and TABULA_T (or TABULA_TA, TABULA_TB, TABULA_TO) before including tabula_add_requant_impl.h"
#endif
#ifndef TABULA_TA
#define TABULA_TA TABULA_T
#endif
#ifndef TABULA_TB
#define TABULA_TB TABULA_T
#endif
#ifndef TABULA_TO
#define TABULA_TO TABULA_T
#endif

#include "tabula_requant.h"

/* Below this many int8 elements the terms are computed per element (the tables cost 512 evaluations). */
#ifndef TABULA_ADD_RQ_TABLE_MIN
#define TABULA_ADD_RQ_TABLE_MIN 512
#endif

/* sat32(apply_scale_32(x, m, s)) of an input term: |x| < 2^16 and m < 2^31, so x * m fits 47 bits. */
static inline int32_t tabula_add_requant_term(int32_t x, int32_t m, int32_t s)
{
    const int64_t v = tabula_asr64((int64_t)x * m + ((int64_t)1 << (s - 1)), s);
    return (int32_t)tabula_clamp64(v, INT32_MIN, INT32_MAX);
}

tabula_status TABULA_FN(const TABULA_TA *a, const TABULA_TB *b, int32_t count, const int32_t *params, TABULA_TO *output)
{
    int32_t i, k;
    int32_t a_zp, a_m, a_s, b_zp, b_m, b_s, sub, zp, lo, hi, m, s;
    if (count < 0 || params == 0) {
        return TABULA_ERR_ARG;
    }
    a_zp = params[0]; a_m = params[1]; a_s = params[2];
    b_zp = params[3]; b_m = params[4]; b_s = params[5];
    sub = params[6]; zp = params[7]; lo = params[8]; hi = params[9]; m = params[10]; s = params[11];
    if (a_zp < TABULA_ZP_MIN(TABULA_TA) || a_zp > TABULA_ZP_MAX(TABULA_TA) || b_zp < TABULA_ZP_MIN(TABULA_TB)
        || b_zp > TABULA_ZP_MAX(TABULA_TB) || zp < TABULA_ZP_MIN(TABULA_TO) || zp > TABULA_ZP_MAX(TABULA_TO)
        || (sub != 0 && sub != 1) || lo < TABULA_MIN(TABULA_TO) || hi > TABULA_MAX(TABULA_TO) || lo > hi) {
        return TABULA_ERR_ARG;
    }
    for (k = 0; k < 3; ++k) { /* the (multiplier, shift) pairs of a, b and the output */
        static const int32_t at[3] = {1, 4, 10};
        if (params[at[k]] < 0 || params[at[k] + 1] < 2 || params[at[k] + 1] > 62) {
            return TABULA_ERR_ARG;
        }
    }
/* One pass over the elements with the two terms given as expressions of i (a table load or the term). */
#define TABULA_ADD_RQ_LOOP(TERM_A, TERM_B)                                                                          \
    for (i = 0; i < count; ++i) {                                                                               \
        const uint32_t u = (uint32_t)(TERM_A), v = (uint32_t)(TERM_B);                                          \
        output[i] = (TABULA_TO)tabula_requantize32(tabula_u32_to_s32(sub ? u - v : u + v), m, s, zp, lo, hi, 0); \
    }
#define TABULA_ADD_RQ_A tabula_add_requant_term((int32_t)a[i] - a_zp, a_m, a_s)
#define TABULA_ADD_RQ_B tabula_add_requant_term((int32_t)b[i] - b_zp, b_m, b_s)
    if (count >= TABULA_ADD_RQ_TABLE_MIN && (sizeof(TABULA_TA) == 1 || sizeof(TABULA_TB) == 1)) {
        int32_t ta[256], tb[256];
        for (k = 0; k < 256; ++k) {
            ta[k] = sizeof(TABULA_TA) == 1 ? tabula_add_requant_term(k - 128 - a_zp, a_m, a_s) : 0;
            tb[k] = sizeof(TABULA_TB) == 1 ? tabula_add_requant_term(k - 128 - b_zp, b_m, b_s) : 0;
        }
        if (sizeof(TABULA_TA) == 1 && sizeof(TABULA_TB) == 1) {
            TABULA_ADD_RQ_LOOP(ta[(int32_t)a[i] + 128], tb[(int32_t)b[i] + 128])
        } else if (sizeof(TABULA_TA) == 1) {
            TABULA_ADD_RQ_LOOP(ta[(int32_t)a[i] + 128], TABULA_ADD_RQ_B)
        } else {
            TABULA_ADD_RQ_LOOP(TABULA_ADD_RQ_A, tb[(int32_t)b[i] + 128])
        }
        return TABULA_OK;
    }
    TABULA_ADD_RQ_LOOP(TABULA_ADD_RQ_A, TABULA_ADD_RQ_B)
    return TABULA_OK;
#undef TABULA_ADD_RQ_LOOP
#undef TABULA_ADD_RQ_A
#undef TABULA_ADD_RQ_B
}
