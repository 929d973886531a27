"""apply_scale_16 (C tabula_apply_scale_16 vs tabula.qmath.apply_scale_16_round_half_up vs an exact
rational oracle) and quantize_multiplier_16: ties on both sides of zero, int48 extremes, every
shift, out-of-contract arguments."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tabula.qmath import QuantizationError, apply_scale_16_round_half_up, quantize_multiplier_16

I48_MIN, I48_MAX, M_MAX = -(2**47), 2**47 - 1, 2**15 - 1


def oracle(v: int, m: int, s: int) -> int:
    """round(v*m / 2^s), ties toward +infinity, from exact rationals."""
    return math.floor(Fraction(v * m, 2**s) + Fraction(1, 2))


def _cases(rng) -> list[tuple[int, int, int]]:
    cases = []
    for s in range(2, 63):  # extremes: every shift with the int48 ends and the multiplier ends
        for v in (I48_MIN, I48_MIN + 1, -(2**31) - 1, -1, 0, 1, 2**31, I48_MAX):
            for m in (0, 1, 2**14, M_MAX):
                cases.append((v, m, s))
    for s in range(15, 62):  # exact ties: m = 2^14 -> v / 2^(s-14); v = odd * 2^(s-15) is half-way
        for odd in (-7, -5, -3, -1, 1, 3, 5, 7):
            v = odd * 2 ** (s - 15)
            if I48_MIN <= v <= I48_MAX:
                cases.append((v, 2**14, s))
    vs = rng.integers(I48_MIN, I48_MAX, 3000, endpoint=True)
    ms = rng.integers(0, M_MAX, 3000, endpoint=True)
    ss = rng.integers(2, 62, 3000, endpoint=True)
    return cases + list(zip(vs.tolist(), ms.tolist(), ss.tolist()))


def test_python_matches_exact_oracle(rng):
    cases = _cases(rng)
    v, m, s = (np.array(c, dtype=np.int64) for c in zip(*cases))
    np.testing.assert_array_equal(apply_scale_16_round_half_up(v, m, s), [oracle(*c) for c in cases])


@pytest.mark.host
def test_c_matches_python(kernel_lib, rng):
    cases = _cases(rng)
    got = np.array([kernel_lib.apply_scale_16(*c) for c in cases], dtype=np.int64)
    v, m, s = (np.array(c, dtype=np.int64) for c in zip(*cases))
    np.testing.assert_array_equal(got, apply_scale_16_round_half_up(v, m, s))


@pytest.mark.host
@pytest.mark.parametrize("v, want", [(-5, -2), (-3, -1), (-1, 0), (1, 1), (3, 2), (5, 3)])
def test_ties_round_half_toward_plus_infinity(kernel_lib, v, want):
    # m = 2^14, s = 15 -> v / 2 exactly half-way: -2.5 -> -2, -0.5 -> 0, 0.5 -> 1, 2.5 -> 3
    assert kernel_lib.apply_scale_16(v, 2**14, 15) == want
    assert int(apply_scale_16_round_half_up(v, 2**14, 15)) == want
    # the same ties at the top of int48: v * 2^14 / 2^61 = v / 2^47, v = +-2^46 -> +-0.5
    big = v * 2**46 // abs(v)
    assert kernel_lib.apply_scale_16(big, 2**14, 61) == (1 if v > 0 else 0)


@pytest.mark.host
@pytest.mark.parametrize("v, m, s", [(1, 2**14, 1), (1, 2**14, 63), (1, -1, 20), (1, 2**15, 20),
                                     (I48_MAX + 1, 2**14, 20), (I48_MIN - 1, 2**14, 20), (-(2**63), 1, 20)])
def test_c_out_of_contract_is_zero_not_undefined(kernel_lib, v, m, s):
    assert kernel_lib.apply_scale_16(v, m, s) == 0


@pytest.mark.parametrize(
    "scale, want",
    [(0.5, (2**14, 15)), (1.0, (2**14, 14)), (0.75, (3 * 2**13, 15)), (0.0, (0, 2)),
     (1 - 2.0**-20, (2**14, 14)),  # mantissa rounds to 2^15: renormalised
     (0.5 + 2.0**-16, (2**14, 15)),  # mantissa tie 2^14 + 0.5 -> even
     (2.0**-60, (4, 62))],  # below 2^-48: shift pinned at 62
)
def test_quantize_multiplier_16_pinned(scale, want):
    assert quantize_multiplier_16(scale) == want


@pytest.mark.parametrize("scale", [-1.0, math.nan, math.inf, 2.0**13])
def test_quantize_multiplier_16_rejects(scale):
    with pytest.raises(QuantizationError):
        quantize_multiplier_16(scale)
