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
#ifdef TABULA_TEST_BREAK_TABLE_S8
    /* TEST ONLY (tests/report/test_first_divergence.py): a wrong result at element TABULA_TEST_BREAK_TABLE_S8 of
     * every call (127, or -128 where 127 is right: a max pool passes it on), for the first-divergence report
     * to find; no build defines it */
    if (count > TABULA_TEST_BREAK_TABLE_S8) {
        output[TABULA_TEST_BREAK_TABLE_S8] = (int8_t)(output[TABULA_TEST_BREAK_TABLE_S8] == 127 ? -128 : 127);
    }
#endif
    return TABULA_OK;
}
