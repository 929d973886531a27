"""SLICE: the spec of ``tabula_slice``.

Semantics: TOSA 1.0 SLICE.  Any dtype; attrs ``start`` and ``size`` (one entry per dim):
``out[j] = x[start + j]`` for ``0 <= j < size``.  Returns a C-contiguous array.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "SLICE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    start, size = [int(v) for v in attrs["start"]], [int(v) for v in attrs["size"]]
    need(len(start) == len(size) == x.rank, OP, f"start/size need {x.rank} entries")
    need(all(0 <= b and 0 <= n and b + n <= d for b, n, d in zip(start, size, x.shape)), OP,
         f"slice start {start} size {size} leaves shape {x.shape}")
    return TType(tuple(size), x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    start, size = [int(v) for v in attrs["start"]], [int(v) for v in attrs["size"]]
    return np.ascontiguousarray(inputs[0][tuple(slice(b, b + n) for b, n in zip(start, size))])


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 SLICE: inputs ``x``, ``start`` and ``size`` (CONST_SHAPE, one entry per dim)."""
    t.emit("SLICE", [t.input(op, 0), t.shape(op.attrs["start"]), t.shape(op.attrs["size"])], [t.output(op)], t.attr("Slice"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 SLICE: ``start`` and ``size`` (CONST_SHAPE) -> attributes."""
    r.emit(OP, top, [r.input(top, 0)], {"start": r.shape(top, 1, "start"), "size": r.shape(top, 2, "size")})
