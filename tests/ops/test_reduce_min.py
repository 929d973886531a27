"""REDUCE_MIN int8 / int16 / int32: C == reference == numpy on every axis of random shapes, at the type's
extremes, with ties and axes of length 1; the contract's refusals."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from elementwise_kernels import ERR_ARG, OK, reduce
from tabula import dtypes
from tabula.reference.ops import reduce_min as spec


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32"])
def test_every_axis_of_random_shapes(kernel_lib, rng, dtype):
    lo, hi = dtypes.range_of(dtype)
    for shape in [(1,), (7,), (3, 5), (2, 1, 4), (2, 3, 4, 5)]:
        x = rng.integers(lo, hi, shape, endpoint=True, dtype=np.int64).astype(dtype)
        for axis in range(len(shape)):
            want = spec.run([x], {"axis": axis})
            np.testing.assert_array_equal(want, x.min(axis=axis, keepdims=True))
            st, got = reduce(kernel_lib, "reduce_min", x, axis, want.shape)
            assert st == OK
            np.testing.assert_array_equal(got, want)
    x = np.array([[lo, hi, lo], [hi, hi, hi], [0, -1, 0]], dtype=dtype)
    np.testing.assert_array_equal(reduce(kernel_lib, "reduce_min", x, 1, (3, 1))[1], [[lo], [hi], [-1]])


@pytest.mark.host
def test_c_rejects_an_empty_axis(kernel_lib):
    x = np.zeros(4, np.int8)
    assert reduce(kernel_lib, "reduce_min", x.reshape(1, 4), 1, (1, 1))[0] == OK
    p = x.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))
    assert kernel_lib.lib.tabula_reduce_min_s8(p, 1, 0, 4, p) == ERR_ARG


def test_contract():
    with pytest.raises(ValueError, match="axis"):
        spec.run([np.zeros((2, 3), np.int8)], {"axis": 2})
    with pytest.raises(ValueError, match="int8/int16/int32"):
        spec.run([np.zeros((2, 3), np.int64)], {"axis": 0})
