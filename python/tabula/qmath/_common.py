"""Helpers every TABLE builder shares: the domain clip, evaluating f, and the checks on its values."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import QuantizationError


def _clip_to_domain(x: np.ndarray, domain) -> np.ndarray:
    """``x`` clipped to ``domain = (lo, hi)`` (either end may be +-inf), same dtype; None: unchanged."""
    if domain is None:
        return x
    lo, hi = domain
    if not lo <= hi:  # also catches NaN
        raise QuantizationError(f"domain {tuple(domain)} is empty or NaN: pass (lo, hi) with lo <= hi")
    return np.clip(x, x.dtype.type(lo), x.dtype.type(hi))


def _eval_f64(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``f(x)`` on a float64 array, as float64, silencing the warnings of poles (1/0, log 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(f(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _check_out_scale(out_scale: float) -> None:
    if not (np.isfinite(out_scale) and out_scale > 0):
        raise QuantizationError(f"output scale {out_scale} is not a positive finite number")


def _end_knot_inside(y: np.ndarray) -> np.ndarray:
    """int16 tables evaluate f at the virtual code +32768 too (the right knot of the last segment, no
    input reaches it).  Where f is undefined just there (sqrt(1 - x) with x = 32768 * s > 1), that knot
    takes f at the last real code instead of failing the op."""
    if y.size > 1 and np.isnan(y[-1]) and not np.isnan(y[-2]):
        y = y.copy()
        y[-1] = y[-2]
    return y


def _check_nan(y: np.ndarray, codes: np.ndarray) -> None:
    if np.isnan(y).any():
        bad = codes[np.isnan(y)]
        raise QuantizationError(
            f"table function is undefined (NaN) at input codes {bad.tolist()[:8]}...; "
            "the op's input qparams must keep every code inside its domain (or pass domain=)"
        )

