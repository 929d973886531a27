"""REDUCE_MAX int8 / int16 / int32: C == reference == numpy on every axis of random shapes, at the
type's extremes, with ties and axes of length 1; the contract's refusals."""
from __future__ import annotations

import numpy as np
import pytest

from tabula import dtypes
from tabula.reference.ops import reduce_max

DTYPES = ("int8", "int16", "int32")


@pytest.mark.host
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_axis_of_random_shapes(kernel_lib, rng, dtype):
    lo, hi = dtypes.range_of(dtype)
    for shape in [(1,), (7,), (3, 5), (2, 1, 4), (2, 3, 4, 5), (1, 4, 4, 17)]:
        x = rng.integers(lo, hi, shape, endpoint=True, dtype=np.int64).astype(dtype)
        for axis in range(len(shape)):
            want = reduce_max.run([x], {"axis": axis})
            assert want.dtype == x.dtype and want.shape == tuple(1 if i == axis else n for i, n in enumerate(shape))
            np.testing.assert_array_equal(want, x.max(axis=axis, keepdims=True))
            np.testing.assert_array_equal(kernel_lib.reduce_max(x, axis), want)


@pytest.mark.host
@pytest.mark.parametrize("dtype", DTYPES)
def test_extremes_and_ties(kernel_lib, dtype):
    lo, hi = dtypes.range_of(dtype)
    x = np.array([[lo, lo, lo], [hi, lo, hi], [lo, hi, hi], [0, -1, 0]], dtype=dtype)
    np.testing.assert_array_equal(kernel_lib.reduce_max(x, 1), [[lo], [hi], [hi], [0]])
    np.testing.assert_array_equal(kernel_lib.reduce_max(x, 0), [[hi, hi, hi]])
    np.testing.assert_array_equal(reduce_max.run([x], {"axis": 1}), [[lo], [hi], [hi], [0]])


def test_contract():
    x = np.zeros((2, 3), np.int8)
    for bad in (2, -1, 1.0):
        with pytest.raises(ValueError, match="axis"):
            reduce_max.run([x], {"axis": bad})
    with pytest.raises(ValueError, match="int8/int16/int32"):
        reduce_max.run([np.zeros((2, 3), np.int64)], {"axis": 0})
    with pytest.raises(ValueError, match="empty"):
        reduce_max.run([np.zeros((2, 0), np.int8)], {"axis": 1})


@pytest.mark.host
def test_c_rejects_an_empty_axis(kernel_lib):
    from tabula.harness import host as kl

    x = np.zeros(4, np.int32)
    assert kernel_lib.lib.tabula_reduce_max_s32(x.ctypes.data_as(kl._i32p), 1, 0, 4, x.ctypes.data_as(kl._i32p)) == kl.TABULA_ERR_ARG
    assert kernel_lib.lib.tabula_reduce_max_s32(x.ctypes.data_as(kl._i32p), -1, 1, 4, x.ctypes.data_as(kl._i32p)) == kl.TABULA_ERR_ARG
