"""EQUAL int32: the spec of ``tabula_equal_s32``.

Semantics: TOSA 1.0 EQUAL with broadcasting (equal ranks, each axis equal or 1 on one side): out = a == b.
TOSA's output is ``bool_t``; the IR holds it as its mask, int8 1 (true) / 0 (false), which SELECT and the
bitwise ops read (the TOSA export CASTs bool to int8).  As GREATER.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, bcast_run, comparison, no_macs

OP = "EQUAL"


def contract(ins: list[TType], attrs: dict) -> TType:
    return comparison(OP, ins)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    return bcast_run(contract, inputs, attrs, lambda a, b: a == b)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 EQUAL: inputs ``a``, ``b`` (int32, broadcasting) -> bool, then CAST bool -> int8 (the mask)."""
    y = t.output(op)
    flag = t.temp(t.tensor(op.outputs[0]).shape, "bool")
    t.emit("EQUAL", [t.input(op, 0), t.input(op, 1)], [flag], t.attr("Equal"))
    t.emit("CAST", [flag], [y], t.attr("Cast"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 EQUAL (int32 inputs; other dtypes are outside the contract) -> EQUAL, its BOOL output the IR's
    int8 mask."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)], mask=True)
