/* REDUCE_SUM int32 (sums in 64 bits, each checked to fit int32): the body is tabula_reduce_impl.h, the
 * contract manifest.toml. */
#define TABULA_FN tabula_reduce_sum_s32
#define TABULA_T int32_t
#define TABULA_REDUCE TABULA_REDUCE_SUM
#include "tabula_reduce_impl.h"
