"""FULLY_CONNECTED int8 x int8 -> int32 and int16 x int8 -> int48: the executable spec of
``tabula_fully_connected_s8`` and ``tabula_fully_connected_s16``.

Semantics: TOSA 0.80 FULLY_CONNECTED.  Shapes:
    x act [N, Cin], w int8 [Cout, Cin], b acc [Cout] -> acc [N, Cout]
(act int8 -> acc int32; act int16 -> acc int64 holding int48.)  attrs: ``input_zp`` (int8 range;
0 for int16), ``weight_zp`` (int8 range).

    out[n,o] = b[o] + sum_i (x[n,i] - input_zp) * (w[o,i] - weight_zp)

Exact int64 arithmetic; a result outside the accumulator (int32, or 48 bits for int16 x) raises
(the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np

from .._checks import act_and_acc, check_zero_point, need, to_int32_exact, to_int48_exact

OP = "FULLY_CONNECTED"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    x, w, b = inputs
    act = act_and_acc(OP, x, w, b)
    need(x.ndim == 2 and w.ndim == 2 and x.shape[1] == w.shape[1], OP, f"x {x.shape} / w {w.shape} mismatch")
    need(b.shape == (w.shape[0],), OP, f"bias shape {b.shape} != ({w.shape[0]},)")
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    check_zero_point(OP, "input_zp", izp, "int8")
    check_zero_point(OP, "weight_zp", wzp, "int8")
    need(act == "int8" or izp == 0, OP, f"input_zp={izp} on an int16 input (int16 is symmetric)")
    acc = (x.astype(np.int64) - izp) @ (w.astype(np.int64) - wzp).T + b.astype(np.int64)
    return to_int32_exact(OP, acc) if act == "int8" else to_int48_exact(OP, acc)
