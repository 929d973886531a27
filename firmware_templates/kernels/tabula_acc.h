/*
 * The accumulator of a typed body (<family>/tabula_<op>_impl.h) whose variant file defines
 * TABULA_ACC_BITS: 32 (int32_t) or 64 (int64_t holding TOSA's int48).  Gives
 *     TABULA_ACC     the accumulator type (int32_t, int64_t)
 *     TABULA_UACC    its unsigned twin (uint32_t, uint64_t): sums are taken modulo 2^32 / 2^64 in it,
 *                    never undefined behaviour
 *     TABULA_TO_ACC  the unsigned -> signed conversion (tabula_u32_to_s32, tabula_u64_to_s64)
 * Included once per kernel source, by its body (MATMUL, TRANSPOSE_CONV2D, RESIZE BILINEAR).
 */
#ifndef TABULA_ACC_H
#define TABULA_ACC_H

#if TABULA_ACC_BITS == 32
#define TABULA_ACC int32_t
#define TABULA_UACC uint32_t
#define TABULA_TO_ACC tabula_u32_to_s32
#elif TABULA_ACC_BITS == 64
#define TABULA_ACC int64_t
#define TABULA_UACC uint64_t
#define TABULA_TO_ACC tabula_u64_to_s64
#else
#error "TABULA_ACC_BITS must be 32 or 64"
#endif

#include "tabula_internal.h"

#endif /* TABULA_ACC_H */
