"""PAD: the spec of ``tabula_pad``.

Semantics: TOSA 1.0 PAD (constant mode).  Any dtype; attrs ``pad_before``, ``pad_after`` (one per
dim, >= 0) and ``pad_value`` (an integer code inside the dtype, e.g. the zero point so the padding is
real 0).
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "PAD"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    pb, pa = [int(v) for v in attrs["pad_before"]], [int(v) for v in attrs["pad_after"]]
    need(len(pb) == len(pa) == x.rank and min(pb + pa, default=0) >= 0, OP, f"pads {pb} / {pa} for a {x.rank}-D input")
    lo, hi = dtypes.range_of(x.dtype)
    value = int(attrs["pad_value"])
    need(lo <= value <= hi, OP, f"pad_value {value} outside {x.dtype}")
    return TType(tuple(d + b + a for d, b, a in zip(x.shape, pb, pa)), x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    (x,) = inputs
    pads = list(zip((int(v) for v in attrs["pad_before"]), (int(v) for v in attrs["pad_after"])))
    return np.pad(x, pads, mode="constant", constant_values=int(attrs["pad_value"]))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 PAD: inputs ``x``, ``padding`` (CONST_SHAPE ``[rank * 2]``, interleaved: dim 0 before,
    dim 0 after, dim 1 before, ...) and ``pad_const`` (CONST [1] of the input type)."""
    x = t.tensor(op.inputs[0])
    padding = [int(v) for b, a in zip(op.attrs["pad_before"], op.attrs["pad_after"]) for v in (b, a)]
    value = t.const(np.array([int(op.attrs["pad_value"])]), x.dtype)
    t.emit("PAD", [t.input(op, 0), t.shape(padding), value], [t.output(op)], t.attr("Pad"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 PAD: ``padding`` (CONST_SHAPE, interleaved before / after per dim) and ``pad_const``
    (CONST [1]) -> ``pad_before``, ``pad_after``, ``pad_value``."""
    padding = r.shape(top, 1, "padding")
    r.emit(OP, top, [r.input(top, 0)], {"pad_before": padding[0::2], "pad_after": padding[1::2],
                                         "pad_value": r.scalar(top, 2, "pad_const")})
