"""MAXIMUM int32: the spec of ``tabula_maximum_s32``.

Semantics: TOSA 1.0 MAXIMUM (integers: no NaN mode) with broadcasting (equal ranks, each axis equal or 1
on one side): ``out = maximum(a, b)``.  The lowering brings both activations to int32 on one shared grid
(RESCALE x1, their zero point removed), so the maximum of the codes is the maximum of the values, exactly.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, bcast_run, broadcast_same, no_macs

OP = "MAXIMUM"


def contract(ins: list[TType], attrs: dict) -> TType:
    return broadcast_same(OP, ins, ("int32",))


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    return bcast_run(contract, inputs, attrs, np.maximum)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 MAXIMUM: inputs ``a``, ``b`` (int32, broadcasting) -> int32; ``nan_mode`` PROPAGATE (integers)."""
    t.emit("MAXIMUM", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("Maximum", t.NanPropagationMode.PROPAGATE))


def from_tosa(r, top) -> None:
    """TOSA 1.0 MAXIMUM (int32; other dtypes are outside the contract) -> MAXIMUM (``nan_mode`` has no effect on
    integers)."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
