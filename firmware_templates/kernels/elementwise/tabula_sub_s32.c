/* SUB int32: the body is tabula_add_sub_impl.h, the contract manifest.toml. */
#define TABULA_FN tabula_sub_s32
#define TABULA_OP(a, b) ((a) - (b))
#include "tabula_add_sub_impl.h"
