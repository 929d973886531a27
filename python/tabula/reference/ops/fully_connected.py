"""FULLY_CONNECTED int8 x int8 -> int32: the executable spec of ``tabula_fully_connected_s8``.

Semantics: TOSA 0.80 FULLY_CONNECTED.  Shapes:
    x int8 [N, Cin], w int8 [Cout, Cin], b int32 [Cout] -> int32 [N, Cout]
attrs: ``input_zp``, ``weight_zp`` (int8 range).

    out[n,o] = b[o] + sum_i (x[n,i] - input_zp) * (w[o,i] - weight_zp)

Exact int64 arithmetic; a result outside int32 raises (the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np

from .._checks import check_zero_point, need, to_int32_exact

OP = "FULLY_CONNECTED"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    x, w, b = inputs
    need(x.dtype == np.int8 and w.dtype == np.int8 and b.dtype == np.int32, OP, "dtypes must be int8, int8, int32")
    need(x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1], OP, f"x {x.shape} / w {w.shape} mismatch")
    need(b.shape == (w.shape[0],), OP, f"bias shape {b.shape} != ({w.shape[0]},)")
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    check_zero_point(OP, "input_zp", izp, "int8")
    check_zero_point(OP, "weight_zp", wzp, "int8")
    acc = (x.astype(np.int64) - izp) @ (w.astype(np.int64) - wzp).T
    return to_int32_exact(OP, acc + b.astype(np.int64))
