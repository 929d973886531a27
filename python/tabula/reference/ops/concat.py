"""CONCAT: the spec of ``tabula_concat``.

Semantics: TOSA 1.0 CONCAT.  inputs: 1..n tensors of one dtype and rank, equal except on ``axis``;
attrs ``axis`` (0 <= axis < rank).  The output joins them along ``axis`` in input order
(``numpy.concatenate``); ValueError for mismatched dtypes or shapes.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, need, no_macs

OP = "CONCAT"


def contract(ins: list[TType], attrs: dict) -> TType:
    need(len(ins) >= 1, OP, "needs at least one input")
    x0 = ins[0]
    axis = int(attrs["axis"])
    need(0 <= axis < x0.rank, OP, f"axis {axis} outside [0, {x0.rank})")
    for i, t in enumerate(ins):
        need(t.dtype == x0.dtype, OP, f"input {i} is {t.dtype}, input 0 is {x0.dtype}")
        need(t.rank == x0.rank and all(t.shape[d] == x0.shape[d] for d in range(x0.rank) if d != axis), OP,
             f"input {i} shape {t.shape} does not match {x0.shape} outside axis {axis}")
    shape = list(x0.shape)
    shape[axis] = sum(t.shape[axis] for t in ins)
    return TType(tuple(shape), x0.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(np.concatenate(inputs, axis=int(attrs["axis"])))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 CONCAT: the inputs in order; attribute ``axis``."""
    t.emit("CONCAT", [t.input(op, i) for i in range(len(op.inputs))], [t.output(op)], t.attr("Concat", int(op.attrs["axis"])))


def from_tosa(r, top) -> None:
    """TOSA 1.0 CONCAT: the inputs in order, attribute ``axis``."""
    r.emit(OP, top, [r.input(top, i) for i in range(len(top.inputs))], {"axis": int(top.attrs["axis"])})
