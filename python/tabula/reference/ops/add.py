"""ADD int32: the spec of ``tabula_add_s32`` (equal shapes) and ``tabula_add_bcast_s32``.

Semantics: TOSA 1.0 ADD with broadcasting: equal ranks, and along each axis the two sizes are equal
or one is 1 (that operand is read again for every index of the axis); ``out = a + b``.  The IR
forbids overflow: a sum outside int32 raises ValueError.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, broadcast_int32, check_arrays, no_macs, to_int32_exact

OP = "ADD"


def contract(ins: list[TType], attrs: dict) -> TType:
    return broadcast_int32(OP, ins)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    a, b = inputs
    return to_int32_exact(OP, a.astype(np.int64) + b.astype(np.int64))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 ADD: inputs ``a``, ``b`` (int32, broadcasting) -> int32."""
    t.emit("ADD", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("Add"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 ADD (int32; other dtypes are outside the contract) -> ADD."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
