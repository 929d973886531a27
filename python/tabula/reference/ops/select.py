"""SELECT: the spec of ``tabula_select``.

Semantics: TOSA 1.0 SELECT with broadcasting: ``out = cond ? a : b`` elementwise.  ``cond`` is the IR's
mask (int8, 0 false, 1 true: what GREATER / EQUAL write); ``a`` and ``b`` one dtype of int8, int16, int32
(on one grid: the lowering puts them there); the three shapes share one rank and broadcast (each axis
the output's size or 1).  The output has ``a``'s dtype and the broadcast shape.
"""
from __future__ import annotations

import numpy as np

from .._checks import MASK_DTYPE, TType, check_arrays, n_inputs, need, no_macs

OP = "SELECT"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 3)
    c, a, b = ins
    need(c.dtype == MASK_DTYPE, OP, f"the condition must be the int8 mask, got {c.dtype}")
    need(a.dtype == b.dtype and a.dtype in ("int8", "int16", "int32"), OP,
         f"a and b must be one of int8/int16/int32, both alike (got {a.dtype}, {b.dtype})")
    need(c.rank == a.rank == b.rank and 1 <= a.rank <= 6, OP, f"ranks of {c.shape}, {a.shape}, {b.shape} differ or leave [1, 6]")
    shape = []
    for dims in zip(c.shape, a.shape, b.shape):
        n = max(dims)
        need(all(d in (1, n) for d in dims), OP, f"shapes {c.shape}, {a.shape}, {b.shape} do not broadcast")
        shape.append(n)
    return TType(tuple(shape), a.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    c, a, b = inputs
    return np.ascontiguousarray(np.where(c != 0, a, b).astype(a.dtype))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 SELECT: the mask CAST int8 -> bool (non-zero is true), then SELECT(cond, a, b)."""
    flag = t.temp(t.tensor(op.inputs[0]).shape, "bool")
    t.emit("CAST", [t.input(op, 0)], [flag], t.attr("Cast"))
    t.emit("SELECT", [flag, t.input(op, 1), t.input(op, 2)], [t.output(op)], t.attr("Select"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 SELECT: the BOOL condition read as the IR's int8 mask; ``a`` and ``b`` int8 / int16 / int32
    (BOOL operands are unsupported: the IR's SELECT moves codes of those types)."""
    r.emit(OP, top, [r.input(top, 0, mask=True), r.input(top, 1), r.input(top, 2)])
