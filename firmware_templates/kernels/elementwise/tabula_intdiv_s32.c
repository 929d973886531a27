/* INTDIV int32 (Python twin: tabula/reference/ops/intdiv.py): the body is tabula_same_shape_impl.h, the
 * contract manifest.toml.  The two pairs TOSA REQUIREs away -- a zero divisor, and INT32_MIN / -1 (its
 * quotient leaves int32) -- are undefined behaviour in C: the kernel stops there with TABULA_ERR_ARG. */
#define TABULA_FN tabula_intdiv_s32
#define TABULA_ELEM(x, y) ((x) / (y))
#define TABULA_REFUSED(x, y) ((y) == 0 || ((x) == INT32_MIN && (y) == -1))
#include "tabula_same_shape_impl.h"
