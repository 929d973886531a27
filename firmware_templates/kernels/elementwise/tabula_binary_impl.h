/*
 * One body for the typed elementwise binary kernels with TOSA 1.0 broadcasting (contract:
 * manifest.toml, elementwise): MAXIMUM / MINIMUM (int32), GREATER / GREATER_EQUAL / EQUAL (int32 ->
 * an int8 mask of 0 / 1), BITWISE_AND / OR / XOR and LOGICAL_LEFT_SHIFT (int8 / int16 / int32).
 * The variant file elementwise/tabula_<op>_<t>.c defines, then includes this file:
 *     TABULA_FN           the kernel's name
 *     TABULA_IN_T         the operands' element type
 *     TABULA_OUT_T        the output's element type
 *     TABULA_ELEM(x, y)   the result for one pair of operands (of TABULA_IN_T)
 *     TABULA_CHECK(x, y)  optional: a condition on one pair; a pair that breaks it stops the kernel with
 *                         TABULA_ERR_ARG, the elements before it written
 *     TABULA_SHIFT_BITS   instead of TABULA_ELEM and TABULA_CHECK: LOGICAL_LEFT_SHIFT of that width (8, 16,
 *                         32): the bits shifted in the type's width, a shift outside [0, width) refused
 *
 * a [a_shape], b [b_shape] and the output share one rank; along each axis a dimension is either the
 * output's or 1 (read again for every output index).  The output walks in row-major order: an odometer
 * over the axes before the last, a tight loop over the last (either operand held when broadcast).
 * Codegen merges axes with the same broadcast pattern first (python/tabula/codegen/ops/_broadcast.py).
 */
#if defined(TABULA_SHIFT_BITS)
#if TABULA_SHIFT_BITS == 8
#define TABULA_ELEM(x, y) tabula_u8_bits_to_s8((uint8_t)((uint32_t)(uint8_t)(x) << (y)))
#elif TABULA_SHIFT_BITS == 16
#define TABULA_ELEM(x, y) tabula_u16_bits_to_s16((uint16_t)((uint32_t)(uint16_t)(x) << (y)))
#elif TABULA_SHIFT_BITS == 32
#define TABULA_ELEM(x, y) tabula_u32_bits_to_s32((uint32_t)((uint32_t)(x) << (y)))
#else
#error "TABULA_SHIFT_BITS is 8, 16 or 32"
#endif
#define TABULA_CHECK(x, y) ((y) >= 0 && (y) < TABULA_SHIFT_BITS)
#endif
#if !defined(TABULA_FN) || !defined(TABULA_IN_T) || !defined(TABULA_OUT_T) || !defined(TABULA_ELEM)
#error "define TABULA_FN, TABULA_IN_T, TABULA_OUT_T and TABULA_ELEM before including tabula_binary_impl.h"
#endif
#ifndef TABULA_CHECK
#define TABULA_CHECK(x, y) 1
#endif

#include "tabula_internal.h"

#define TABULA_BINARY_MAX_RANK 6

/* The signed value of a bit pattern of the type's width (no implementation-defined conversion):
 * LOGICAL_LEFT_SHIFT works on the bits and keeps the type's width, as TOSA 1.0 does. */
static inline int8_t tabula_u8_bits_to_s8(uint8_t u)
{
    return (u <= 0x7Fu) ? (int8_t)u : (int8_t)(-(int32_t)(uint8_t)(~u) - 1);
}

static inline int16_t tabula_u16_bits_to_s16(uint16_t u)
{
    return (u <= 0x7FFFu) ? (int16_t)u : (int16_t)(-(int32_t)(uint16_t)(~u) - 1);
}

static inline int32_t tabula_u32_bits_to_s32(uint32_t u)
{
    return tabula_u32_to_s32(u);
}

tabula_status TABULA_FN(const TABULA_IN_T *a, const int32_t *a_shape, const TABULA_IN_T *b, const int32_t *b_shape,
                        int32_t rank, TABULA_OUT_T *output)
{
    int32_t out_shape[TABULA_BINARY_MAX_RANK], sa[TABULA_BINARY_MAX_RANK], sb[TABULA_BINARY_MAX_RANK];
    int32_t idx[TABULA_BINARY_MAX_RANK];
    int32_t i, j, inner, outer, step_a, step_b, off_a = 0, off_b = 0, da = 1, db = 1;
    int64_t total = 1;
    if (rank < 1 || rank > TABULA_BINARY_MAX_RANK) {
        return TABULA_ERR_ARG;
    }
    for (i = rank - 1; i >= 0; --i) {
        const int32_t na = a_shape[i], nb = b_shape[i];
        if (na < 0 || nb < 0 || (na != nb && na != 1 && nb != 1)) {
            return TABULA_ERR_ARG;
        }
        out_shape[i] = (na == 1) ? nb : na;
        sa[i] = (na == 1) ? 0 : da; /* stride 0: the axis is broadcast */
        sb[i] = (nb == 1) ? 0 : db;
        da *= na;
        db *= nb;
        total *= out_shape[i];
        idx[i] = 0;
    }
    if (total == 0) {
        return TABULA_OK;
    }
    if (total > INT32_MAX) {
        return TABULA_ERR_ARG;
    }
    inner = out_shape[rank - 1];
    outer = (int32_t)(total / inner);
    step_a = sa[rank - 1];
    step_b = sb[rank - 1];
    for (j = 0; j < outer; ++j) {
        const TABULA_IN_T *pa = a + off_a;
        const TABULA_IN_T *pb = b + off_b;
        TABULA_OUT_T *po = output + (int64_t)j * inner;
        int32_t k;
        for (k = 0; k < inner; ++k) {
            const TABULA_IN_T x = pa[k * step_a];
            const TABULA_IN_T y = pb[k * step_b];
            if (!(TABULA_CHECK(x, y))) {
                return TABULA_ERR_ARG;
            }
            po[k] = (TABULA_OUT_T)(TABULA_ELEM(x, y));
        }
        /* the odometer over the axes before the last */
        for (i = rank - 2; i >= 0; --i) {
            off_a += sa[i];
            off_b += sb[i];
            if (++idx[i] < out_shape[i]) {
                break;
            }
            off_a -= sa[i] * out_shape[i];
            off_b -= sb[i] * out_shape[i];
            idx[i] = 0;
        }
    }
    return TABULA_OK;
}
