/* AVG_POOL2D int8: the body is tabula_pool2d_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_avg_pool2d_s8
#define TABULA_T int8_t
#define TABULA_POOL_AVG 1
#include "tabula_pool2d_impl.h"
