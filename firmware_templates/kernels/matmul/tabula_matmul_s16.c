/* MATMUL int16 x int16 -> int48 held in int64_t: the body is tabula_matmul_impl.h, the contract
 * manifest.toml. */
#define TABULA_FN tabula_matmul_s16
#define TABULA_T int16_t
#define TABULA_ACC_BITS 64
#include "tabula_matmul_impl.h"
