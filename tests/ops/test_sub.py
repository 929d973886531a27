"""SUB int32: C == reference == exact Python ints on random data and at the int32 ends; overflow is
an error in the reference (the IR forbids it)."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import sub

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


@pytest.mark.host
def test_c_equals_reference(kernel_lib, rng):
    a = rng.integers(I32_MIN // 2, I32_MAX // 2, (4, 5, 6), endpoint=True).astype(np.int32)
    b = rng.integers(I32_MIN // 2, I32_MAX // 2, (4, 5, 6), endpoint=True).astype(np.int32)
    want = sub.run([a, b], {})
    assert want.dtype == np.int32
    np.testing.assert_array_equal(want, a.astype(np.int64) - b)
    np.testing.assert_array_equal(kernel_lib.sub(a, b), want)
    np.testing.assert_array_equal(kernel_lib.sub(b, a), -want)  # order matters


@pytest.mark.host
def test_int32_ends(kernel_lib):
    a = np.array([I32_MAX, I32_MIN, -1, 0, I32_MAX, I32_MIN], np.int32)
    b = np.array([0, 0, I32_MAX, I32_MIN + 1, I32_MAX, -1], np.int32)
    want = [I32_MAX, I32_MIN, I32_MIN, I32_MAX, 0, I32_MIN + 1]
    np.testing.assert_array_equal(sub.run([a, b], {}), want)
    np.testing.assert_array_equal(kernel_lib.sub(a, b), want)


@pytest.mark.parametrize("a, b", [(I32_MAX, -1), (I32_MIN, 1), (0, I32_MIN)])
def test_reference_rejects_overflow(a, b):
    with pytest.raises(ValueError, match="overflow"):
        sub.run([np.array([a], np.int32), np.array([b], np.int32)], {})


@pytest.mark.host
def test_c_rejects_negative_count(kernel_lib):
    from tabula.harness import host as kl

    x = np.zeros(4, np.int32)
    p = x.ctypes.data_as(kl._i32p)
    assert kernel_lib.lib.tabula_sub_s32(p, p, -1, p) == kl.TABULA_ERR_ARG


@pytest.mark.host
@pytest.mark.parametrize("sa, sb", [((1, 4, 4, 8), (1, 1, 1, 8)), ((1, 1, 1, 8), (1, 4, 4, 8)), ((2, 3, 5), (2, 1, 1)),
                                    ((1, 3, 17), (1, 1, 1)), ((1, 1, 1), (1, 3, 17)), ((4, 1, 6), (1, 5, 1))])
def test_broadcast_c_equals_reference(kernel_lib, rng, sa, sb):
    a = rng.integers(I32_MIN // 2, I32_MAX // 2, sa, endpoint=True).astype(np.int32)
    b = rng.integers(I32_MIN // 2, I32_MAX // 2, sb, endpoint=True).astype(np.int32)
    want = sub.run([a, b], {})
    np.testing.assert_array_equal(want, a.astype(np.int64) - b)
    np.testing.assert_array_equal(kernel_lib.sub_bcast(a, b), want)
    np.testing.assert_array_equal(kernel_lib.sub_bcast(b, a), -want)  # order matters when one side is held


@pytest.mark.host
def test_broadcast_int32_ends(kernel_lib):
    a = np.array([[0], [-1]], np.int32)
    b = np.array([[I32_MIN + 1, I32_MAX, 0]], np.int32)
    want = [[I32_MAX, -I32_MAX, 0], [I32_MAX - 1, I32_MIN, -1]]
    np.testing.assert_array_equal(sub.run([a, b], {}), want)
    np.testing.assert_array_equal(kernel_lib.sub_bcast(a, b), want)
