"""apply_scale_32 (C tabula_apply_scale_32 vs tabula.qmath.apply_scale_32_round_half_up vs an exact
rational oracle) and quantize_multiplier, pinned at ties, extremes and mantissa overflow."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tabula.qmath import QuantizationError, apply_scale_32_round_half_up, quantize_multiplier

I32_MIN, I32_MAX, M_MAX = -(2**31), 2**31 - 1, 2**31 - 1


def oracle(v: int, m: int, s: int) -> int:
    """round(v*m / 2^s), ties toward +infinity, from exact rationals."""
    return math.floor(Fraction(v * m, 2**s) + Fraction(1, 2))


def _cases(rng) -> list[tuple[int, int, int]]:
    cases = []
    # extremes: every shift with the largest multiplier and the int32 ends
    for s in range(2, 63):
        for v in (I32_MIN, I32_MIN + 1, -1, 0, 1, I32_MAX):
            for m in (0, 1, 2**30, M_MAX):
                cases.append((v, m, s))
    # exact ties: m = 2^30, s >= 31 -> v*m/2^s = v / 2^(s-30); v = odd * 2^(s-31) is half-way
    for s in range(31, 62):
        for odd in (-7, -5, -3, -1, 1, 3, 5, 7):
            v = odd * 2 ** (s - 31)
            if I32_MIN <= v <= I32_MAX:
                cases.append((v, 2**30, s))
    # random
    vs = rng.integers(I32_MIN, I32_MAX, 3000, endpoint=True)
    ms = rng.integers(0, M_MAX, 3000, endpoint=True)
    ss = rng.integers(2, 62, 3000, endpoint=True)
    cases += list(zip(vs.tolist(), ms.tolist(), ss.tolist()))
    return cases


def test_python_apply_scale_matches_exact_oracle(rng):
    cases = _cases(rng)
    v, m, s = (np.array(c, dtype=np.int64) for c in zip(*cases))
    got = apply_scale_32_round_half_up(v, m, s)
    want = np.array([oracle(*c) for c in cases], dtype=np.int64)
    np.testing.assert_array_equal(got, want)


@pytest.mark.host
def test_c_apply_scale_matches_python(kernel_lib, rng):
    cases = _cases(rng)
    got = [kernel_lib.apply_scale_32(*c) for c in cases]
    v, m, s = (np.array(c, dtype=np.int64) for c in zip(*cases))
    np.testing.assert_array_equal(np.array(got, dtype=np.int64), apply_scale_32_round_half_up(v, m, s))


@pytest.mark.host
@pytest.mark.parametrize(
    "v, want",
    [(-3, -1), (-1, 0), (1, 1), (3, 2), (-2, -1), (2, 1), (5, 3), (-5, -2)],
    ids=lambda a: str(a),
)
def test_ties_round_half_toward_plus_infinity(kernel_lib, v, want):
    # m = 2^30, s = 31 -> v / 2: -1.5 -> -1, -0.5 -> 0, 0.5 -> 1, 1.5 -> 2
    assert kernel_lib.apply_scale_32(v, 2**30, 31) == want
    assert int(apply_scale_32_round_half_up(v, 2**30, 31)) == want


@pytest.mark.host
def test_c_out_of_contract_shift_is_zero_not_undefined(kernel_lib):
    for s in (-1, 0, 1, 63, 64, 1000):
        assert kernel_lib.apply_scale_32(12345, 2**30, s) == 0


# --- quantize_multiplier -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "scale, want",
    [
        (0.5, (2**30, 31)),
        (1.0, (2**30, 30)),
        (0.75, (3 * 2**29, 31)),
        (2.0**-40, (2**22, 62)),  # below 2^-31: shift pinned at 62, multiplier shrinks
        (0.0, (0, 2)),
        (1 - 2.0**-40, (2**30, 30)),  # mantissa rounds to 2^31: renormalised
        (0.5 + 2.0**-32, (2**30, 31)),  # mantissa tie 2^30 + 0.5 -> even (2^30)
        (0.5 + 3 * 2.0**-32, (2**30 + 2, 31)),  # mantissa tie 2^30 + 1.5 -> even (2^30 + 2)
        (2.0**28 * 1.5, (3 * 2**29, 2)),  # largest exponent that still gives shift >= 2
        (2.0**-100, (0, 62)),  # far below range: precision lost, multiplier 0
    ],
)
def test_quantize_multiplier_pinned(scale, want):
    assert quantize_multiplier(scale) == want


@pytest.mark.parametrize("scale", [-1e-9, -1.0, math.nan, math.inf, -math.inf, 2.0**29, 1e12, 2.0**29 * (1 - 2.0**-40)])
def test_quantize_multiplier_rejects(scale):
    # 2^29 (1 - 2^-40) is below 2^29 but its mantissa overflows to 2^31 and it needs shift 1
    with pytest.raises(QuantizationError):
        quantize_multiplier(scale)
    assert issubclass(QuantizationError, ValueError)


def test_quantize_multiplier_is_accurate(rng):
    scales = np.exp2(rng.uniform(-31, 28.9, 2000))
    for sc in scales.tolist():
        m, s = quantize_multiplier(sc)
        assert 2**30 <= m < 2**31 and 2 <= s <= 62
        assert abs(m / 2.0**s - sc) <= sc * 2.0**-31  # rounding of a 31-bit mantissa


def test_quantize_multiplier_tiny_scales_keep_absolute_precision(rng):
    for sc in np.exp2(rng.uniform(-60, -31, 500)).tolist():
        m, s = quantize_multiplier(sc)
        assert s == 62 and 0 <= m < 2**31
        # one rounding at 2^-62: the error is at most half an LSB
        assert m == round(sc * 2.0**62)
        assert abs(m / 2.0**62 - sc) <= 0.5 * 2.0**-62
