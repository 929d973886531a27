"""RESHAPE: TOSA 1.0 RESHAPE.  Any dtype; attrs ``shape`` (the output shape).  Row-major element
order is kept, so it is a no-op on the data (the device aliases the buffer; no C kernel)."""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "RESHAPE"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    shape = tuple(int(v) for v in attrs["shape"])
    need(int(np.prod(shape, dtype=np.int64)) == x.size, OP, f"cannot reshape {x.shape} to {shape}")
    return np.ascontiguousarray(x).reshape(shape)
