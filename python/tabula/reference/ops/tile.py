"""TILE: the spec of ``tabula_tile``.

Semantics: TOSA 1.0 TILE.  Any dtype, rank 1..6; attr ``multiples`` (one integer >= 1 per dim): output
dim i has ``shape[i] * multiples[i]`` entries and ``out[j] = x[j mod shape]`` (numpy ``tile``).
Returns a C-contiguous array.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, ints, n_inputs, need, no_macs

OP = "TILE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(1 <= x.rank <= 6, OP, f"rank {x.rank} outside 1..6")
    mult = ints(OP, attrs, "multiples", x.rank)
    need(all(m >= 1 for m in mult), OP, f"multiples {mult} must be >= 1")
    return TType(tuple(d * m for d, m in zip(x.shape, mult)), x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(np.tile(inputs[0], [int(m) for m in attrs["multiples"]]))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 TILE: inputs ``x`` and ``multiples`` (CONST_SHAPE, one entry per dim)."""
    t.emit("TILE", [t.input(op, 0), t.shape(op.attrs["multiples"])], [t.output(op)], t.attr("Tile"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 TILE: ``multiples`` (CONST_SHAPE) -> attribute."""
    r.emit(OP, top, [r.input(top, 0)], {"multiples": r.shape(top, 1, "multiples")})
