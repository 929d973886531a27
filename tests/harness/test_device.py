"""tabula.harness.device: a refused argument comes back as the host library's KernelError, a measured call
has an instruction count that grows with the work, and a pointer-table parameter (const int16_t *const *)
reaches the device."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import kernel_targets

from tabula import qmath
from tabula.harness.host import TABULA_ERR_ARG, KernelError


@pytest.mark.parametrize("target", kernel_targets("m55"))
def test_device_harness_reports_status_and_instructions(device_lib, target):
    dev = device_lib(target)
    x = np.ones((1, 64), np.int8)
    with pytest.raises(KernelError) as e:
        dev.fully_connected(x, np.ones((4, 64), np.int8), None, input_zp=200, weight_zp=0)
    assert e.value.status == TABULA_ERR_ARG
    assert dev.status("tabula_fully_connected_s8", 1, 64, 4, x, 200, np.ones((4, 64), np.int8), 0, None, None,
                      np.zeros(4, np.int32)) == TABULA_ERR_ARG
    codes = np.arange(-32768, 32768, 97, dtype=np.int16)
    t16 = np.round(np.tanh(np.linspace(-4, 4, 513)) * 32767).astype(np.int16)
    with dev.batch() as runs:
        small = dev.fully_connected(x, np.ones((4, 64), np.int8), None, input_zp=0, weight_zp=0)
        big = dev.fully_connected(x, np.ones((64, 64), np.int8), None, input_zp=0, weight_zp=0)
        y16 = dev.table16(codes, t16)        # a pointer-table parameter (const int16_t *const *hi)
    assert small.tolist() == [[64] * 4] and big.tolist() == [[64] * 64]
    assert 0 < runs[0].instructions < runs[1].instructions
    np.testing.assert_array_equal(y16, qmath.table16_apply(t16, codes))
