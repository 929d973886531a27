"""FULLY_CONNECTED int8 x int8 -> int32 and int16 x int8 -> int48: the spec of
``tabula_fully_connected_s8`` and ``tabula_fully_connected_s16``.

Semantics: TOSA 0.80 FULLY_CONNECTED.  Shapes:
    x act [N, Cin], w int8 [Cout, Cin], b acc [Cout] -> acc [N, Cout]
(act int8 -> acc int32; act int16 -> acc int48.)  attrs: ``input_zp`` (int8 range; 0 for int16),
``weight_zp`` (int8 range).

    out[n,o] = b[o] + sum_i (x[n,i] - input_zp) * (w[o,i] - weight_zp)

Exact int64 arithmetic; a result outside the accumulator (int32, or 48 bits for int16 x) raises
(the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, need, to_acc_exact, weighted

OP = "FULLY_CONNECTED"


def contract(ins: list[TType], attrs: dict) -> TType:
    x, w, acc = weighted(OP, ins, attrs)
    need(x.rank == 2 and w.rank == 2 and x.shape[1] == w.shape[1], OP, f"x {x.shape} / w {w.shape} mismatch")
    return TType((x.shape[0], w.shape[0]), acc)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    x, w, b = inputs
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    acc = (x.astype(np.int64) - izp) @ (w.astype(np.int64) - wzp).T + b.astype(np.int64)
    return to_acc_exact(OP, acc, out.dtype)
