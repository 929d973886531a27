"""LOGICAL_LEFT_SHIFT int8 / int16 / int32: the spec of ``tabula_logical_left_shift_s8`` / ``_s16`` / ``_s32``.

Semantics: TOSA 1.0 LOGICAL_LEFT_SHIFT with broadcasting (equal ranks, each axis equal or 1 on one side):
``out = a << b`` on the dtype's bits (bits shifted past its width are lost; the rest read as a signed
value).  TOSA REQUIREs ``0 <= b < bits`` (7, 15, 31 at most): a shift outside raises ValueError.  The lowering uses it for
PyTorch's ``<<`` on integer tensors (an argmax's indices).
"""
from __future__ import annotations

import numpy as np

from .. import _checks
from .._checks import TType, broadcast_same, check_arrays, need, no_macs

OP = "LOGICAL_LEFT_SHIFT"


def contract(ins: list[TType], attrs: dict) -> TType:
    return broadcast_same(OP, ins, ("int8", "int16", "int32"))


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    a, b = inputs
    bits = np.dtype(a.dtype).itemsize * 8
    need(b.size == 0 or (int(b.min()) >= 0 and int(b.max()) < bits), OP,
         f"shift outside [0, {bits - 1}] (TOSA REQUIREs it)")
    mask = (1 << bits) - 1
    u = (a.astype(np.int64) & mask) << b.astype(np.int64)
    u = u & mask
    signed = np.where(u >= (1 << (bits - 1)), u - (1 << bits), u)
    return np.ascontiguousarray(signed.astype(_checks.dtypes.get(out.dtype).np)).reshape(out.shape)  # rank 0 stays 0


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 LOGICAL_LEFT_SHIFT: inputs ``a``, ``b`` (int8 / int16 / int32, broadcasting) -> the same dtype."""
    t.emit("LOGICAL_LEFT_SHIFT", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("LogicalLeftShift"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 LOGICAL_LEFT_SHIFT (int8 / int16 / int32) -> LOGICAL_LEFT_SHIFT."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
