"""ADD int32: the executable spec of ``tabula_add_s32``.

Semantics: TOSA 1.0 ADD on equal shapes (no broadcasting): ``out = a + b``.  The IR forbids
overflow: a sum outside int32 raises ValueError.
"""
from __future__ import annotations

import numpy as np

from .._checks import need, to_int32_exact

OP = "ADD"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    a, b = inputs
    need(a.dtype == b.dtype == np.int32, OP, f"dtypes must be int32, int32 (got {a.dtype}, {b.dtype})")
    need(a.shape == b.shape, OP, f"shapes {a.shape} and {b.shape} differ (no broadcasting)")
    return to_int32_exact(OP, a.astype(np.int64) + b.astype(np.int64))
