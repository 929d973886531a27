/*
 * TABLE int16 (contract: manifest.toml, table_s16): each element through tabula_table16_interp, the
 * TOSA 1.0 int16 lookup shared with tabula_table16_s16.  Python twin: tabula/reference/ops/table.py.
 */
#include "tabula_table16_interp.h"

tabula_status tabula_table_s16(const int16_t *input, int32_t count, const int16_t *table, int32_t *output)
{
    int32_t n, bad = 0;
    if (count < 0) {
        return TABULA_ERR_ARG;
    }
    for (n = 0; n < count; ++n) {
        const int32_t y = tabula_table16_interp(table, input[n], &bad);
        if (bad) {
            return TABULA_ERR_ARG;
        }
        output[n] = y;
    }
    return TABULA_OK;
}
