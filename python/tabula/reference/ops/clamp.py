"""CLAMP int8 / int16: the spec of ``tabula_clamp_s8`` and ``tabula_clamp_s16``.

Semantics: TOSA 1.0 CLAMP.  x act [...] -> same dtype and shape; attrs ``min``, ``max`` (integer
codes, ``qmin <= min <= max <= qmax``; ValueError otherwise).

    out = min(max(x, min), max)
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "CLAMP"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(x.dtype in ("int8", "int16"), OP, f"input dtype {x.dtype} not int8/int16")
    lo, hi = dtypes.range_of(x.dtype)
    a, b = int(attrs["min"]), int(attrs["max"])
    need(lo <= a <= b <= hi, OP, f"min/max {a}..{b} outside {x.dtype} [{lo}, {hi}] or min > max")
    return x


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    (x,) = inputs
    return np.clip(x, int(attrs["min"]), int(attrs["max"])).astype(x.dtype)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 CLAMP: input ``x`` (int8 / int16); attributes ``min_val`` / ``max_val`` (the bounds as the
    bytes of the input type), ``nan_mode`` PROPAGATE."""
    np_t = dtypes.get(t.tensor(op.inputs[0]).dtype).np
    lo, hi = (np.array([int(op.attrs[k])], np_t).tobytes() for k in ("min", "max"))
    t.emit("CLAMP", [t.input(op, 0)], [t.output(op)], t.attr("Clamp", t.builder, lo, hi, t.NanPropagationMode.PROPAGATE))


def from_tosa(r, top) -> None:
    """TOSA 1.0 CLAMP: ``min_val`` / ``max_val`` (the bytes of the input type) -> ``min`` / ``max``;
    ``nan_mode`` has no effect on integers."""
    dt = r.ir_dtype(top, top.inputs[0], "input")
    np_t = dtypes.get(dt).np
    lo, hi = (int(np.frombuffer(bytes(top.attrs[k]), np_t)[0]) for k in ("min_val", "max_val"))
    r.emit(OP, top, [r.input(top, 0)], {"min": lo, "max": hi})
