"""BITWISE_XOR int8 / int16 / int32: the spec of ``tabula_bitwise_xor_s8`` / ``_s16`` / ``_s32``.

Semantics: TOSA 1.0 BITWISE_XOR with broadcasting (equal ranks, each axis equal or 1 on one side):
``out = a ^ b`` on the two's complement bits, in the operands' dtype.  On masks it is the logical xor; a mask XOR 1 is its logical not, any value XOR -1 its bitwise not.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, bcast_run, broadcast_same, no_macs

OP = "BITWISE_XOR"


def contract(ins: list[TType], attrs: dict) -> TType:
    return broadcast_same(OP, ins, ("int8", "int16", "int32"))


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    return bcast_run(contract, inputs, attrs, lambda a, b: a ^ b)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 BITWISE_XOR: inputs ``a``, ``b`` (int8 / int16 / int32, broadcasting) -> the same dtype."""
    t.emit("BITWISE_XOR", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("BitwiseXor"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 BITWISE_XOR (int8 / int16 / int32) -> BITWISE_XOR."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
