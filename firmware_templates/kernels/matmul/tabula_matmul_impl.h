/*
 * One body for every MATMUL kernel tabula_matmul_<t> (contract: manifest.toml, matmul; Python twin:
 * tabula/reference/ops/matmul.py).  The variant file matmul/tabula_matmul_<t>.c defines, then
 * includes this file:
 *     TABULA_FN        the kernel's name
 *     TABULA_T         the operand type (int8_t, int16_t)
 *     TABULA_ACC_BITS  32 (int32_t accumulator) or 64 (int64_t holding TOSA int48); tabula_acc.h
 *                      derives the accumulator types from it
 * The sums are taken modulo 2^32 / 2^64 in the unsigned twin of the accumulator type (never
 * undefined behaviour) and equal TOSA's accumulator whenever the exact sum fits it, which the IR
 * requires (tabula.lowering.bound_accumulators_pass proves it).
 *
 * Loop order n, h, c, w: each row of the output accumulates a[n,h,c] times the contiguous row
 * b[n,c,:], so both operands are read in memory order.  Every product (a - a_zp)(b - b_zp) fits
 * int32 (at most 255 * 255 for int8, 32768 * 32768 for int16).
 */
#if !defined(TABULA_FN) || !defined(TABULA_T) || !defined(TABULA_ACC_BITS)
#error "define TABULA_FN, TABULA_T and TABULA_ACC_BITS before including tabula_matmul_impl.h"
#endif

#include <stddef.h>

#include "tabula_acc.h"

tabula_status TABULA_FN(int32_t n, int32_t h, int32_t c, int32_t w, const TABULA_T *a, int32_t a_zp,
                        const TABULA_T *b, int32_t b_zp, TABULA_ACC *output)
{
    int32_t bi, i, k, j;
    if (n < 1 || h < 1 || c < 1 || w < 1 || a_zp < TABULA_ZP_MIN(TABULA_T) || a_zp > TABULA_ZP_MAX(TABULA_T)
        || b_zp < TABULA_ZP_MIN(TABULA_T) || b_zp > TABULA_ZP_MAX(TABULA_T)) {
        return TABULA_ERR_ARG;
    }
    for (bi = 0; bi < n; ++bi) {
        const TABULA_T *ab = a + (size_t)bi * (size_t)h * (size_t)c;
        const TABULA_T *bb = b + (size_t)bi * (size_t)c * (size_t)w;
        for (i = 0; i < h; ++i) {
            /* the output row holds the running sums as unsigned (same object representation) */
            TABULA_ACC *orow = output + ((size_t)bi * (size_t)h + (size_t)i) * (size_t)w;
            TABULA_UACC *urow = (TABULA_UACC *)orow;
            for (j = 0; j < w; ++j) {
                urow[j] = 0u;
            }
            for (k = 0; k < c; ++k) {
                const int32_t av = (int32_t)ab[(size_t)i * (size_t)c + (size_t)k] - a_zp;
                const TABULA_T *brow = bb + (size_t)k * (size_t)w;
                if (av == 0) {
                    continue;
                }
                for (j = 0; j < w; ++j) {
                    urow[j] += (TABULA_UACC)(TABULA_ACC)(av * ((int32_t)brow[j] - b_zp));
                }
            }
            for (j = 0; j < w; ++j) {
                orow[j] = TABULA_TO_ACC(urow[j]);
            }
        }
    }
    return TABULA_OK;
}
