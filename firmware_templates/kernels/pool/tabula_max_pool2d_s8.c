/* MAX_POOL2D int8: the body is tabula_pool2d_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_max_pool2d_s8
#define TABULA_T int8_t
#define TABULA_POOL_AVG 0
#include "tabula_pool2d_impl.h"
