"""CLAMP int8 / int16: the executable spec of ``tabula_clamp_s8`` and ``tabula_clamp_s16``.

Semantics: TOSA 1.0 CLAMP.  x act [...] -> same dtype and shape; attrs ``min``, ``max`` (integer
codes, ``qmin <= min <= max <= qmax``; ValueError otherwise).

    out = min(max(x, min), max)
"""
from __future__ import annotations

import numpy as np

from tabula.qmath import DTYPE_RANGE

from .._checks import need

OP = "CLAMP"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    need(x.dtype in (np.int8, np.int16), OP, f"input dtype {x.dtype} not int8/int16")
    lo, hi = DTYPE_RANGE[x.dtype.name]
    a, b = int(attrs["min"]), int(attrs["max"])
    need(lo <= a <= b <= hi, OP, f"min/max {a}..{b} outside {x.dtype.name} [{lo}, {hi}] or min > max")
    return np.clip(x, a, b).astype(x.dtype)
