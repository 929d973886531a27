/* FULLY_CONNECTED int8 x int8 -> int32: the body is tabula_fully_connected_impl.h, the contract
 * manifest.toml. */
#define TABULA_FN tabula_fully_connected_s8
#define TABULA_FC_WIDE 0
#include "tabula_fully_connected_impl.h"
