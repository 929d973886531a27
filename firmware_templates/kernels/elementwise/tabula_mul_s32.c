/* MUL int32 (python twin: tabula/reference/ops/mul.py): the body is tabula_same_shape_impl.h, the
 * element tabula_mul_elem_s32 (tabula_internal.h, shared with tabula_mul_bcast_s32: |a * b| <= 2^62 and
 * the rounding term at most 2^61, so nothing overflows int64; an out-of-contract result wraps modulo
 * 2^32), the contract manifest.toml. */
#define TABULA_FN tabula_mul_s32
#define TABULA_EXTRA_PARAMS , int32_t shift
#define TABULA_EXTRA_OK (shift >= 0 && shift <= 62)
#define TABULA_ELEM(x, y) tabula_mul_elem_s32((x), (y), shift)
#include "tabula_same_shape_impl.h"
