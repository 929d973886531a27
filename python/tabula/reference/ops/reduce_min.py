"""REDUCE_MIN: the spec of ``tabula_reduce_min_s8`` / ``_s16`` / ``_s32``.

Semantics: TOSA 1.0 REDUCE_MIN on integers (no NaN mode).  int8, int16 or int32 of any rank >= 1;
attr ``axis`` in [0, rank).  The output keeps the rank, with the reduced dim 1:
``out[..., 0, ...] = min over the axis of x[..., k, ...]`` (numpy ``min(keepdims=True)``).
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs, reduced_shape

OP = "REDUCE_MIN"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(x.dtype in ("int8", "int16", "int32"), OP, f"input dtype {x.dtype} not int8/int16/int32")
    shape, _ = reduced_shape(OP, x, attrs)
    return TType(shape, x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(np.min(inputs[0], axis=int(attrs["axis"]), keepdims=True))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 REDUCE_MIN: input ``x``; attributes ``axis``, ``nan_mode`` PROPAGATE (integers have no NaN)."""
    t.emit("REDUCE_MIN", [t.input(op, 0)], [t.output(op)],
           t.attr("ReduceMin", int(op.attrs["axis"]), t.NanPropagationMode.PROPAGATE))


def from_tosa(r, top) -> None:
    """TOSA 1.0 REDUCE_MIN: attribute ``axis`` (``nan_mode`` has no effect on integers)."""
    r.emit(OP, top, [r.input(top, 0)], {"axis": int(top.attrs["axis"])})
