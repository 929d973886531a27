"""LOGICAL_LEFT_SHIFT: C == reference == the shift on the dtype's bits (numpy, masked to the width) for
int8 / int16 / int32, every shift the dtype allows (0..bits - 1), broadcasting; a shift outside it is refused
by both (TOSA REQUIREs it)."""
from __future__ import annotations

import numpy as np
import pytest

from elementwise_kernels import ERR_ARG, binary, check_binary
from tabula import dtypes
from tabula.reference.ops import logical_left_shift as spec


def _shift(a, b, bits):
    u = ((a & ((1 << bits) - 1)) << b) & ((1 << bits) - 1)
    return np.where(u >= 1 << (bits - 1), u - (1 << bits), u)


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32"])
def test_every_shift_on_random_operands(kernel_lib, rng, dtype):
    lo, hi = dtypes.range_of(dtype)
    npt, bits = dtypes.get(dtype).np, dtypes.get(dtype).bits
    calls = {"n": 0}

    def values(shape):
        calls["n"] += 1
        if calls["n"] % 2:
            return rng.integers(lo, hi, shape, endpoint=True, dtype=np.int64).astype(npt)
        return rng.integers(0, bits, shape).astype(npt)

    check_binary(kernel_lib, rng, "LOGICAL_LEFT_SHIFT", "logical_left_shift", dtype, lambda a, b: _shift(a, b, bits),
                 values=values)


@pytest.mark.host
def test_a_shift_outside_0_31_is_refused(kernel_lib):
    a, b = np.array([1, 2, 3], np.int32), np.array([1, 32, 0], np.int32)
    st, _ = binary(kernel_lib, "logical_left_shift", a, b)
    assert st == ERR_ARG
    with pytest.raises(ValueError, match=r"\[0, 31\]"):
        spec.run([a, b], {})
    st, _ = binary(kernel_lib, "logical_left_shift", a.astype(np.int8), np.array([1, 8, 0], np.int8))
    assert st == ERR_ARG
    with pytest.raises(ValueError, match=r"\[0, 7\]"):
        spec.run([a.astype(np.int8), np.array([1, 8, 0], np.int8)], {})
    with pytest.raises(ValueError, match=r"\[0, 31\]"):
        spec.run([a, np.array([0, -1, 0], np.int32)], {})
