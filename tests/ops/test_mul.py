"""MUL int32: C == reference == exact Python ints for shift 0 and shift > 0 (rounding half toward
+infinity, ties of both signs), the int64 product extremes, overflow errors, shift range."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import mul

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _exact(a, b, shift):
    return [((int(x) * int(y)) + (1 << (shift - 1) if shift else 0)) >> shift for x, y in zip(a.ravel(), b.ravel())]


@pytest.mark.host
@pytest.mark.parametrize("shift", [0, 1, 7, 15, 31, 40, 62])
def test_c_equals_reference(kernel_lib, rng, shift):
    # operands sized so the rounded product fits int32 (shift 0: |a|, |b| <= 2^15)
    bits = min(15 + shift // 2, 31)
    a = rng.integers(-(2**bits), 2**bits - 1, (6, 7), endpoint=True).astype(np.int32)
    b = rng.integers(-(2**bits), 2**bits - 1, (6, 7), endpoint=True).astype(np.int32)
    want = mul.run([a, b], {"shift": shift})
    assert want.dtype == np.int32
    np.testing.assert_array_equal(want.ravel(), _exact(a, b, shift))
    np.testing.assert_array_equal(kernel_lib.mul(a, b, shift), want)


@pytest.mark.host
def test_shift_0_is_the_plain_product_and_default(kernel_lib):
    a = np.array([3, -3, 46341, -46341, I32_MIN, I32_MAX, 1], np.int32)
    b = np.array([5, 5, 46340, 46340, 1, 1, -1], np.int32)
    want = [15, -15, 46341 * 46340, -46341 * 46340, I32_MIN, I32_MAX, -1]
    np.testing.assert_array_equal(mul.run([a, b], {}), want)  # shift defaults to 0
    np.testing.assert_array_equal(kernel_lib.mul(a, b, 0), want)


@pytest.mark.host
def test_ties_round_half_toward_plus_infinity(kernel_lib):
    # shift 1: p / 2, odd p is half-way: 1.5 -> 2, -1.5 -> -1, 0.5 -> 1, -0.5 -> 0
    a = np.array([3, -3, 1, -1, 5, -5], np.int32)
    b = np.ones(6, np.int32)
    want = [2, -1, 1, 0, 3, -2]
    np.testing.assert_array_equal(mul.run([a, b], {"shift": 1}), want)
    np.testing.assert_array_equal(kernel_lib.mul(a, b, 1), want)
    # a tie at a large shift: p = +-(2k+1) 2^39, shift 40
    a = np.array([2**20, -(2**20), 3 * 2**19, -3 * 2**19], np.int32)
    b = np.array([2**19, 2**19, 2**20, 2**20], np.int32)
    np.testing.assert_array_equal(kernel_lib.mul(a, b, 40), [1, 0, 2, -1])
    np.testing.assert_array_equal(mul.run([a, b], {"shift": 40}), [1, 0, 2, -1])


@pytest.mark.host
def test_int64_product_extremes(kernel_lib):
    # INT32_MIN^2 = 2^62 is the largest product; + 2^61 rounding must not overflow int64
    a = np.array([I32_MIN, I32_MIN, I32_MAX, I32_MIN], np.int32)
    b = np.array([I32_MIN, I32_MAX, I32_MAX, 1], np.int32)
    for shift in (31, 40, 62):
        want = _exact(a, b, shift)
        if all(I32_MIN <= v <= I32_MAX for v in want):
            np.testing.assert_array_equal(mul.run([a, b], {"shift": shift}), want)
            np.testing.assert_array_equal(kernel_lib.mul(a, b, shift), want)
    np.testing.assert_array_equal(kernel_lib.mul(a[:3], b[:3], 62), [1, -1, 1])


@pytest.mark.parametrize("a, b, shift", [(I32_MAX, 2, 0), (I32_MIN, -1, 0), (2**31 - 1, 2**31 - 1, 30)])
def test_reference_rejects_overflow(a, b, shift):
    with pytest.raises(ValueError, match="overflow"):
        mul.run([np.array([a], np.int32), np.array([b], np.int32)], {"shift": shift})


def test_reference_rejects_shift():
    for s in (-1, 63):
        with pytest.raises(ValueError, match="shift"):
            mul.run([np.zeros(2, np.int32), np.zeros(2, np.int32)], {"shift": s})


@pytest.mark.host
@pytest.mark.parametrize("count, shift", [(-1, 0), (4, -1), (4, 63)])
def test_c_rejects(kernel_lib, count, shift):
    from tabula.harness import host as kl

    x = np.zeros(4, np.int32)
    p = x.ctypes.data_as(kl._i32p)
    assert kernel_lib.lib.tabula_mul_s32(p, p, count, shift, p) == kl.TABULA_ERR_ARG


@pytest.mark.host
@pytest.mark.parametrize("shift", [0, 1, 15, 40])
@pytest.mark.parametrize("sa, sb", [((1, 4, 4, 8), (1, 1, 1, 8)), ((1, 1, 1, 8), (1, 4, 4, 8)), ((2, 3, 5), (2, 1, 1)),
                                    ((1, 3, 17), (1, 1, 1)), ((4, 1, 6), (1, 5, 1)), ((5, 7), (5, 7))])
def test_broadcast_c_equals_reference(kernel_lib, rng, shift, sa, sb):
    bits = min(15 + shift // 2, 31)
    a = rng.integers(-(2**bits), 2**bits - 1, sa, endpoint=True).astype(np.int32)
    b = rng.integers(-(2**bits), 2**bits - 1, sb, endpoint=True).astype(np.int32)
    want = mul.run([a, b], {"shift": shift})
    ab = np.broadcast_arrays(a, b)
    np.testing.assert_array_equal(want.ravel(), _exact(ab[0], ab[1], shift))
    np.testing.assert_array_equal(kernel_lib.mul_bcast(a, b, shift), want)


@pytest.mark.host
def test_broadcast_ties_round_half_toward_plus_infinity(kernel_lib):
    a = np.array([[3], [-3], [1], [-1]], np.int32)
    b = np.array([[1, 5]], np.int32)
    want = [[2, 8], [-1, -7], [1, 3], [0, -2]]  # 1.5, 7.5, -1.5, -7.5, 0.5, 2.5, -0.5, -2.5
    np.testing.assert_array_equal(mul.run([a, b], {"shift": 1}), want)
    np.testing.assert_array_equal(kernel_lib.mul_bcast(a, b, 1), want)


@pytest.mark.host
@pytest.mark.parametrize("shift", [-1, 63])
def test_broadcast_c_rejects_shift(kernel_lib, shift):
    from tabula.harness import host as kl

    x = np.zeros(4, np.int32)
    shape = np.array([4], np.int32)
    p, sp = x.ctypes.data_as(kl._i32p), shape.ctypes.data_as(kl._i32p)
    assert kernel_lib.lib.tabula_mul_bcast_s32(p, sp, p, sp, 1, shift, p) == kl.TABULA_ERR_ARG
