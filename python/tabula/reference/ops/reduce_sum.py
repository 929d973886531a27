"""REDUCE_SUM int32: the spec of ``tabula_reduce_sum_s32``.

Semantics: TOSA 1.0 REDUCE_SUM on int32 of any rank >= 1; attr ``axis`` in [0, rank).  The output keeps
the rank, with the reduced dim 1: ``out[..., 0, ...] = sum over the axis``.  The IR forbids overflow
(TOSA REQUIREs the sum to fit int32): a sum outside int32 raises ValueError.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs, reduced_shape, to_int32_exact

OP = "REDUCE_SUM"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(x.dtype == "int32", OP, f"input dtype {x.dtype} not int32")
    shape, _ = reduced_shape(OP, x, attrs)
    return TType(shape, "int32")


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    return to_int32_exact(OP, np.sum(inputs[0].astype(np.int64), axis=int(attrs["axis"]), keepdims=True))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 REDUCE_SUM: input ``x`` (int32); attribute ``axis``."""
    t.emit("REDUCE_SUM", [t.input(op, 0)], [t.output(op)], t.attr("ReduceSum", int(op.attrs["axis"])))


def from_tosa(r, top) -> None:
    """TOSA 1.0 REDUCE_SUM: attribute ``axis``."""
    r.emit(OP, top, [r.input(top, 0)], {"axis": int(top.attrs["axis"])})
