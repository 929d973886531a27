"""REDUCE_SUM int32: C == reference == numpy on every axis, sums reaching exactly the int32 ends, and
a sum one past them refused by both (TOSA REQUIREs it to fit; neither wraps)."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import reduce_sum

I32 = np.iinfo(np.int32)


@pytest.mark.host
def test_every_axis_of_random_shapes(kernel_lib, rng):
    for shape in [(1,), (9,), (3, 5), (2, 1, 4), (2, 3, 4, 5), (1, 4, 4, 17)]:
        x = rng.integers(-(2**24), 2**24, shape, dtype=np.int64).astype(np.int32)
        for axis in range(len(shape)):
            want = reduce_sum.run([x], {"axis": axis})
            np.testing.assert_array_equal(want, x.astype(np.int64).sum(axis=axis, keepdims=True))
            np.testing.assert_array_equal(kernel_lib.reduce_sum(x, axis), want)


@pytest.mark.host
def test_sums_at_the_int32_ends(kernel_lib):
    x = np.array([[I32.max, 0], [I32.max - 5, 5], [I32.min, 0], [I32.min + 7, -7], [I32.max, I32.min]], np.int32)
    want = [[I32.max], [I32.max], [I32.min], [I32.min], [-1]]
    np.testing.assert_array_equal(reduce_sum.run([x], {"axis": 1}), want)
    np.testing.assert_array_equal(kernel_lib.reduce_sum(x, 1), want)


@pytest.mark.host
@pytest.mark.parametrize("row", [[I32.max, 1], [I32.min, -1], [2**30, 2**30]])
def test_a_sum_outside_int32_is_refused(kernel_lib, row):
    from tabula.harness import host as kl

    x = np.array([row], np.int32)
    with pytest.raises(ValueError, match="overflow"):
        reduce_sum.run([x], {"axis": 1})
    with pytest.raises(kl.KernelError):
        kernel_lib.reduce_sum(x, 1)


def test_contract():
    with pytest.raises(ValueError, match="int32"):
        reduce_sum.run([np.zeros((2, 3), np.int8)], {"axis": 0})
    with pytest.raises(ValueError, match="axis"):
        reduce_sum.run([np.zeros((2, 3), np.int32)], {"axis": 3})
