"""PAD: the spec of ``tabula_pad``.

Semantics: TOSA 1.0 PAD (constant mode).  Any dtype; attrs ``pad_before``, ``pad_after`` (one per
dim, >= 0) and ``pad_value`` (an integer code inside the dtype, e.g. the zero point so the padding is
real 0).
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import TType, check_arrays, n_inputs, need

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
