"""CONCAT: the executable spec of ``tabula_concat``.

Semantics: TOSA 1.0 CONCAT.  inputs: 1..n tensors of one dtype and rank, equal except on ``axis``;
attrs ``axis`` (0 <= axis < rank).  The output joins them along ``axis`` in input order
(``numpy.concatenate``); ValueError for mismatched dtypes or shapes.
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "CONCAT"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    need(len(inputs) >= 1, OP, "needs at least one input")
    x0 = inputs[0]
    axis = int(attrs["axis"])
    need(0 <= axis < x0.ndim, OP, f"axis {axis} outside [0, {x0.ndim})")
    for i, t in enumerate(inputs):
        need(t.dtype == x0.dtype, OP, f"input {i} is {t.dtype}, input 0 is {x0.dtype}")
        need(t.ndim == x0.ndim and all(t.shape[d] == x0.shape[d] for d in range(x0.ndim) if d != axis), OP,
             f"input {i} shape {t.shape} does not match {x0.shape} outside axis {axis}")
    return np.ascontiguousarray(np.concatenate(inputs, axis=axis))
