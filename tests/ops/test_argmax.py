"""ARGMAX int8 / int16 -> int32: C == reference == numpy ``argmax`` (the first index of the maximum) on every
axis of random shapes, ties (all equal, repeated maxima), the type's extremes; the contract."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from elementwise_kernels import ERR_ARG, OK, reduce
from tabula import dtypes
from tabula.reference.ops import argmax as spec


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_every_axis_with_ties(kernel_lib, rng, dtype):
    lo, hi = dtypes.range_of(dtype)
    for shape in [(1,), (9,), (3, 5), (2, 1, 4), (2, 3, 4, 5)]:
        for x in (rng.integers(lo, hi, shape, endpoint=True, dtype=np.int64).astype(dtype),
                  rng.integers(-2, 2, shape).astype(dtype), np.full(shape, lo, dtype)):
            for axis in range(len(shape)):
                want = spec.run([x], {"axis": axis})
                np.testing.assert_array_equal(want.reshape(-1), np.argmax(x, axis=axis).reshape(-1))
                assert want.dtype == np.int32
                st, got = reduce(kernel_lib, "argmax", x, axis, want.shape, np.int32)
                assert st == OK
                np.testing.assert_array_equal(got, want)
    x = np.array([lo, hi, 3, hi], dtype)
    assert spec.run([x], {"axis": 0}).tolist() == [1]


@pytest.mark.host
def test_c_rejects_an_empty_axis(kernel_lib):
    x = np.zeros(4, np.int8)
    assert reduce(kernel_lib, "argmax", x.reshape(1, 4), 1, (1,), np.int32)[0] == OK
    p = x.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))
    y = np.zeros(4, np.int32).ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    assert kernel_lib.lib.tabula_argmax_s8(p, 1, 0, 4, y) == ERR_ARG


def test_contract():
    with pytest.raises(ValueError, match="int8/int16"):
        spec.run([np.zeros((2, 3), np.int32)], {"axis": 0})
    assert spec.contract([spec.TType((2, 3, 4), "int8")], {"axis": 1}) == spec.TType((2, 4), "int32")
