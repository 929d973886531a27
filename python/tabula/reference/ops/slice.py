"""SLICE: the executable spec of ``tabula_slice``.

Semantics: TOSA 1.0 SLICE.  Any dtype; attrs ``start`` and ``size`` (one entry per dim):
``out[j] = x[start + j]`` for ``0 <= j < size``.  Returns a C-contiguous array.
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "SLICE"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    start, size = [int(v) for v in attrs["start"]], [int(v) for v in attrs["size"]]
    need(len(start) == len(size) == x.ndim, OP, f"start/size need {x.ndim} entries")
    need(all(0 <= b and 0 <= n and b + n <= d for b, n, d in zip(start, size, x.shape)), OP,
         f"slice start {start} size {size} leaves shape {x.shape}")
    return np.ascontiguousarray(x[tuple(slice(b, b + n) for b, n in zip(start, size))])
