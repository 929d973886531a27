"""REVERSE: the spec of ``tabula_reverse``.

Semantics: TOSA 1.0 REVERSE.  Any dtype, rank 1..6; attr ``axis`` in [0, rank): the output has the input's
shape and ``out[..., k, ...] = x[..., n - 1 - k, ...]`` along the axis (numpy ``flip``).  PyTorch's
``flip`` over several dims is one REVERSE per dim.  Returns a C-contiguous array.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "REVERSE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(1 <= x.rank <= 6, OP, f"rank {x.rank} outside 1..6")
    axis = attrs["axis"]
    need(isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and 0 <= int(axis) < x.rank, OP,
         f"axis {axis!r} outside [0, {x.rank})")
    return x


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(np.flip(inputs[0], axis=int(attrs["axis"])))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 REVERSE: input ``x``; attribute ``axis``."""
    t.emit("REVERSE", [t.input(op, 0)], [t.output(op)], t.attr("Reverse", int(op.attrs["axis"])))


def from_tosa(r, top) -> None:
    """TOSA 1.0 REVERSE: attribute ``axis`` (BOOL inputs are unsupported: the IR holds bool only as a mask)."""
    r.emit(OP, top, [r.input(top, 0)], {"axis": int(top.attrs["axis"])})
