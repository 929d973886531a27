"""REVERSE: C == reference == numpy ``flip`` along every axis of random shapes (ranks 1..6), element sizes
1, 2, 4 and 8; axes of length 1; the contract's and the kernel's refusals."""
from __future__ import annotations

import numpy as np
import pytest

from elementwise_kernels import ERR_ARG, OK, reverse
from tabula.reference.ops import reverse as spec


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_every_axis_of_random_shapes(kernel_lib, rng, dtype):
    for shape in [(1,), (7,), (3, 5), (2, 1, 4), (2, 3, 4, 5), (1, 2, 3, 1, 2, 3)]:
        x = rng.integers(-100, 100, shape).astype(dtype)
        for axis in range(len(shape)):
            want = spec.run([x], {"axis": axis})
            np.testing.assert_array_equal(want, np.flip(x, axis))
            st, got = reverse(kernel_lib, x, axis)
            assert st == OK
            np.testing.assert_array_equal(got, want)


@pytest.mark.host
def test_c_rejects_an_empty_axis(kernel_lib):
    x = np.zeros(4, np.int8)
    assert kernel_lib.lib.tabula_reverse(x.ctypes.data, 1, 0, 4, x.ctypes.data) == ERR_ARG
    assert kernel_lib.lib.tabula_reverse(x.ctypes.data, -1, 1, 4, x.ctypes.data) == ERR_ARG


def test_contract():
    with pytest.raises(ValueError, match="axis"):
        spec.run([np.zeros((2, 3), np.int8)], {"axis": 2})
