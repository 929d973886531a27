"""MUL int32: the executable spec of ``tabula_mul_s32``.

Semantics: TOSA 1.0 MUL on equal shapes (no broadcasting); attrs ``shift`` (default 0, in [0, 62]):

    p = a * b   (exact, int64);   out = (p + 2^(shift-1)) >> shift  if shift > 0  else  p

with an arithmetic (flooring) shift: a single rounding, half toward +infinity.  The IR forbids
overflow: a result outside int32 raises ValueError.
"""
from __future__ import annotations

import numpy as np

from .._checks import need, to_int32_exact

OP = "MUL"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    a, b = inputs
    need(a.dtype == b.dtype == np.int32, OP, f"dtypes must be int32, int32 (got {a.dtype}, {b.dtype})")
    need(a.shape == b.shape, OP, f"shapes {a.shape} and {b.shape} differ (no broadcasting)")
    shift = int(attrs.get("shift", 0))
    need(0 <= shift <= 62, OP, f"shift {shift} outside [0, 62]")
    p = a.astype(np.int64) * b.astype(np.int64)  # |p| <= 2^62: exact
    if shift > 0:
        p = (p + (np.int64(1) << np.int64(shift - 1))) >> np.int64(shift)
    return to_int32_exact(OP, p)
