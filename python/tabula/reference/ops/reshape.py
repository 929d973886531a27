"""RESHAPE: TOSA 1.0 RESHAPE.  Any dtype; attrs ``shape`` (the output shape).  Row-major element
order is kept, so it is a no-op on the data (the device aliases the buffer, or copies it)."""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "RESHAPE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    shape = tuple(int(v) for v in attrs["shape"])
    need(int(np.prod(shape, dtype=np.int64)) == int(np.prod(x.shape, dtype=np.int64)), OP, f"cannot reshape {x.shape} to {shape}")
    return TType(shape, x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(inputs[0]).reshape(out.shape)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 RESHAPE: inputs ``x`` and ``shape`` (CONST_SHAPE)."""
    out = t.tensor(op.outputs[0])
    t.reshape(t.input(op, 0), out.shape, out.dtype, out=t.output(op))


def from_tosa(r, top) -> None:
    """TOSA 1.0 RESHAPE: ``shape`` (CONST_SHAPE) -> attribute ``shape``."""
    r.emit(OP, top, [r.input(top, 0)], {"shape": r.shape(top, 1, "shape")})
