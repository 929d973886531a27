"""ARGMAX int8 / int16 -> int32: the spec of ``tabula_argmax_s8`` / ``_s16``.

Semantics: TOSA 1.0 ARGMAX on integers (no NaN mode): attr ``axis`` in [0, rank); the output drops that
axis (rank - 1 dims; a 1-D input gives shape ``(1,)`` here, TOSA's rank 0 held as one element) and holds
the first index of the maximum along it (numpy ``argmax``) as int32.  On one grid the codes order as the
values do, so the index is PyTorch's ``argmax`` of the dequantized tensor.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs, reduced_shape

OP = "ARGMAX"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    need(x.dtype in ("int8", "int16"), OP, f"input dtype {x.dtype} not int8/int16")
    _, axis = reduced_shape(OP, x, attrs)
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis) or (1,)
    return TType(shape, "int32")


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(np.argmax(inputs[0], axis=int(attrs["axis"])).astype(np.int32).reshape(out.shape))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 ARGMAX: input ``x`` (int8 / int16) -> int32; attributes ``axis``, ``nan_mode`` PROPAGATE.  A
    1-D input's rank-0 result is RESHAPEd to the IR's ``(1,)``."""
    x = t.tensor(op.inputs[0])
    axis = int(op.attrs["axis"])
    if len(x.shape) == 1:
        r = t.temp((), "int32")
        t.emit("ARGMAX", [t.input(op, 0)], [r], t.attr("ArgMax", axis, t.NanPropagationMode.PROPAGATE))
        t.reshape(r, (1,), "int32", t.output(op))
        return
    t.emit("ARGMAX", [t.input(op, 0)], [t.output(op)], t.attr("ArgMax", axis, t.NanPropagationMode.PROPAGATE))


def from_tosa(r, top) -> None:
    """TOSA 1.0 ARGMAX: attribute ``axis`` (``nan_mode`` has no effect on integers).  A 1-D input's rank-0
    output is the IR's ``(1,)`` RESHAPEd to ``()`` (the inverse of :func:`tosa`)."""
    attrs = {"axis": int(top.attrs["axis"])}
    if len(r.tosa_tensor(top.inputs[0])[0]) == 1 and r.tosa_tensor(top.outputs[0])[0] == ():
        one = r.emit(OP, top, [r.input(top, 0)], attrs, shape=(1,))
        r.emit("RESHAPE", top, list(one.outputs), {"shape": []})
        return
    r.emit(OP, top, [r.input(top, 0)], attrs)
