"""INTDIV int32: the spec of ``tabula_intdiv_s32``.

Semantics: TOSA 1.0 INTDIV on equal shapes (no broadcasting): ``out = a / b`` truncated toward zero
(as C99's ``/``).  The IR forbids what TOSA REQUIREs away: a zero divisor, and ``-2^31 / -1`` (its
quotient leaves int32); either raises ValueError.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, need, no_macs, same_shape_int32

OP = "INTDIV"


def contract(ins: list[TType], attrs: dict) -> TType:
    return same_shape_int32(OP, ins)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    a, b = (v.astype(np.int64) for v in inputs)
    need(not (b == 0).any(), OP, "division by zero (TOSA REQUIREs a non-zero divisor)")
    need(not ((a == -(2**31)) & (b == -1)).any(), OP, "-2^31 / -1 leaves int32")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(np.int32)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 INTDIV: inputs ``a``, ``b`` (int32, same shape) -> int32."""
    t.emit("INTDIV", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("IntDiv"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 INTDIV (int32) -> INTDIV; broadcast shapes are outside the contract (equal shapes only)."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
