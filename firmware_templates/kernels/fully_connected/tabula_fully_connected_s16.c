/* FULLY_CONNECTED int16 x int8 -> int48 held in int64_t (a16w8): the body is
 * tabula_fully_connected_impl.h, the contract manifest.toml.  int16 is symmetric: no input zero point. */
#define TABULA_FN tabula_fully_connected_s16
#define TABULA_FC_WIDE 1
#include "tabula_fully_connected_impl.h"
