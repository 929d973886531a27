"""CLAMP int8 / int16: the spec of ``tabula_clamp_s8`` and ``tabula_clamp_s16``.

Semantics: TOSA 1.0 CLAMP.  x act [...] -> same dtype and shape; attrs ``min``, ``max`` (integer
codes, ``qmin <= min <= max <= qmax``; ValueError otherwise).

    out = min(max(x, min), max)
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import TType, check_arrays, n_inputs, need

OP = "CLAMP"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(x.dtype in ("int8", "int16"), OP, f"input dtype {x.dtype} not int8/int16")
    lo, hi = dtypes.range_of(x.dtype)
    a, b = int(attrs["min"]), int(attrs["max"])
    need(lo <= a <= b <= hi, OP, f"min/max {a}..{b} outside {x.dtype} [{lo}, {hi}] or min > max")
    return x


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    (x,) = inputs
    return np.clip(x, int(attrs["min"]), int(attrs["max"])).astype(x.dtype)
