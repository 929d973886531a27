"""MUL int32: the spec of ``tabula_mul_s32`` (equal shapes) and ``tabula_mul_bcast_s32``.

Semantics: TOSA 1.0 MUL with broadcasting (as ADD: equal ranks, each axis equal or 1); attrs
``shift`` (default 0, in [0, 62]):

    p = a * b   (exact, int64);   out = (p + 2^(shift-1)) >> shift  if shift > 0  else  p

with an arithmetic (flooring) shift: a single rounding, half toward +infinity.  The IR forbids
overflow: a result outside int32 raises ValueError.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, broadcast_int32, check_arrays, need, no_macs, to_int32_exact

OP = "MUL"


def contract(ins: list[TType], attrs: dict) -> TType:
    out = broadcast_int32(OP, ins)
    shift = int(attrs.get("shift", 0))
    need(0 <= shift <= 62, OP, f"shift {shift} outside [0, 62]")
    return out


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    a, b = inputs
    shift = int(attrs.get("shift", 0))
    p = a.astype(np.int64) * b.astype(np.int64)  # |p| <= 2^62: exact
    if shift > 0:
        p = (p + (np.int64(1) << np.int64(shift - 1))) >> np.int64(shift)
    return to_int32_exact(OP, p)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 MUL: inputs ``a``, ``b`` (int32, broadcasting) and ``shift`` (CONST int8 [1]) -> int32."""
    shift = t.const(np.array([int(op.attrs.get("shift", 0))]), "int8")
    t.emit("MUL", [t.input(op, 0), t.input(op, 1), shift], [t.output(op)], t.attr("Mul"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 MUL: ``a``, ``b`` (int32) and ``shift`` (a CONST int8 [1]) -> MUL with attribute ``shift``
    (int8 / int16 operands are outside the contract: the IR multiplies int32)."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)], {"shift": r.scalar(top, 2, "shift")})
