/*
 * TABLE int8 (TOSA 1.0 TABLE): out[i] = table[in[i] + 128], table has 256 int8 entries.
 * Python twin: tabula/reference/ops/table.py.  TABULA_ERR_ARG when count < 0.
 */
#include "tabula_kernels.h"

tabula_status tabula_table_s8(const int8_t *input, int32_t count, const int8_t *table, int8_t *output)
{
    int32_t i;
    if (count < 0) {
        return TABULA_ERR_ARG;
    }
    for (i = 0; i < count; ++i) {
        output[i] = table[(int32_t)input[i] + 128];
    }
    return TABULA_OK;
}
