/*
 * The element macros of the int32 same-shape body (tabula_same_shape_impl.h) and the broadcasting body
 * (tabula_broadcast_impl.h), one contract for both: the variant file defines TABULA_ELEM(x, y) and may
 * define
 *     TABULA_EXTRA_PARAMS   extra parameters after the size (with a leading comma), and
 *     TABULA_EXTRA_OK       a condition on them (MUL: its shift); when not defined, none and 1
 *     TABULA_REFUSED(x, y)  1 for a pair the op refuses (INTDIV: a zero divisor, INT32_MIN / -1;
 *                           LOGICAL_LEFT_SHIFT: a shift outside the width); TABULA_STOP_IF_REFUSED(x, y)
 *                           then stops the kernel there with TABULA_ERR_ARG, the elements before written
 * Included once by the body, after the variant's defines.
 */
#if !defined(TABULA_FN) || !defined(TABULA_ELEM)
#error "define TABULA_FN and TABULA_ELEM before including an elementwise body"
#endif
#ifndef TABULA_EXTRA_PARAMS
#define TABULA_EXTRA_PARAMS
#define TABULA_EXTRA_OK 1
#endif
#ifdef TABULA_REFUSED
#define TABULA_STOP_IF_REFUSED(x, y)                                                                      \
    if (TABULA_REFUSED(x, y)) {                                                                           \
        return TABULA_ERR_ARG;                                                                            \
    }
#else
#define TABULA_STOP_IF_REFUSED(x, y)
#endif
