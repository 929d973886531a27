/* MATMUL int8 x int8 -> int32: the body is tabula_matmul_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_matmul_s8
#define TABULA_T int8_t
#define TABULA_ACC_BITS 32
#include "tabula_matmul_impl.h"
