/*
 * TABLE int8: one lookup per element.  Contract: manifest.toml (table); Python twin:
 * tabula/reference/ops/table.py.
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
