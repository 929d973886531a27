"""The integer LayerNorm plan (tabula.qmath.layer_norm): the TABLE-pair seed is an upper bound of the
square root on every W' it can meet, NEWTON_STEPS integer Newton steps then land within 1 of it, and the
plan's shifts keep every op inside int32 and TOSA's REQUIREs for the extreme rows of int8 and int16."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.qmath import QuantizationError
from tabula.qmath.layer_norm import W_BITS, NEWTON_STEPS, build_layer_norm_plan, newton_count, newton_steps, seed_of


def test_the_seed_bounds_the_root_and_newton_settles_in_the_declared_steps():
    w = np.unique(np.concatenate([np.arange(1, 1 << 16), np.geomspace(1 << 16, 2**W_BITS - 1, 20000).astype(np.int64)]))
    r = seed_of(w)
    assert (r >= np.sqrt(w)).all() and (r <= 3 * np.sqrt(w) + 4).all()
    assert np.abs(newton_steps(w, r, NEWTON_STEPS) - np.sqrt(w)).max() <= 1.0
    assert newton_count() == NEWTON_STEPS


@pytest.mark.parametrize("dtype,c", [("int8", 1), ("int8", 32), ("int8", 4096), ("int16", 2), ("int16", 32), ("int16", 768)])
def test_the_plan_keeps_the_extreme_rows_in_range(dtype, c):
    plan = build_layer_norm_plan(c, 0.05 if dtype == "int8" else 2e-4, dtype, 1e-5, np.linspace(-2, 2, c),
                                 np.linspace(-1, 1, c), 0.04 if dtype == "int8" else 3e-4)
    assert plan.w_max < 2**W_BITS and plan.e >= 1 and plan.f >= 2
    assert np.abs(plan.g.astype(np.int64)).max() < 2**31 and np.abs(plan.beta.astype(np.int64)).max() < 2**31
    # the bound shrinks with the row's spread; int8 rows of 16+ codes are within a few LSB
    bounds = [plan.error_lsb(s) for s in (1, 4, 16, 64)]
    assert bounds == sorted(bounds, reverse=True) and bounds[-1] >= 0.5
    if dtype == "int8" and c == 32:
        assert plan.error_lsb(16) < 2.0


def test_a_row_too_long_for_int32_is_refused():
    with pytest.raises(QuantizationError, match="layer_norm"):
        build_layer_norm_plan(2**16, 1e-4, "int16", 1e-5, None, None, 1e-3)
