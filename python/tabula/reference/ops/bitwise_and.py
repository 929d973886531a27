"""BITWISE_AND int8 / int16 / int32: the spec of ``tabula_bitwise_and_s8`` / ``_s16`` / ``_s32``.

Semantics: TOSA 1.0 BITWISE_AND with broadcasting (equal ranks, each axis equal or 1 on one side):
``out = a & b`` on the two's complement bits, in the operands' dtype.  On the IR's masks (0 / 1) it is the logical and.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, bcast_run, broadcast_same, no_macs

OP = "BITWISE_AND"


def contract(ins: list[TType], attrs: dict) -> TType:
    return broadcast_same(OP, ins, ("int8", "int16", "int32"))


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    return bcast_run(contract, inputs, attrs, lambda a, b: a & b)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 BITWISE_AND: inputs ``a``, ``b`` (int8 / int16 / int32, broadcasting) -> the same dtype."""
    t.emit("BITWISE_AND", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("BitwiseAnd"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 BITWISE_AND (int8 / int16 / int32) -> BITWISE_AND."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
