"""GATHER: the spec of ``tabula_gather``.

Semantics: TOSA 1.0 GATHER.  inputs ``values`` [N, K, C] (int8, int16 or int32) and ``indices`` [N, W] int32;
output [N, W, C] of the values' dtype with ``out[n, w, c] = values[n, indices[n, w], c]``: row ``indices[n, w]``
of batch ``n`` copied whole (the codes move, unchanged: the output has the values' grid).  TOSA REQUIREs
``0 <= indices[n, w] < K``; here an index outside it is a ValueError (the C kernel returns TABULA_ERR_ARG).
tabula lowers PyTorch's indexing by a tensor to it (``gather``, ``index``, ``index_select``, ``embedding``,
``as_strided``, ``unfold`` and the scatters with constant indices: :mod:`tabula.lowering.ops.gather`).
Returns a C-contiguous array.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "GATHER"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 2)
    values, indices = ins
    need(values.rank == 3, OP, f"values must be [N, K, C], got shape {values.shape}")
    need(values.dtype in ("int8", "int16", "int32"), OP, f"values are {values.dtype}; int8, int16 or int32 only")
    need(indices.rank == 2 and indices.dtype == "int32", OP,
         f"indices must be int32 [N, W], got {indices.dtype} {indices.shape}")
    need(indices.shape[0] == values.shape[0], OP,
         f"indices have N = {indices.shape[0]}, values N = {values.shape[0]}")
    return TType((values.shape[0], indices.shape[1], values.shape[2]), values.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    values, indices = inputs
    k = values.shape[1]
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= k):
        bad = indices[(indices < 0) | (indices >= k)]
        raise ValueError(f"{OP}: index {int(bad.flat[0])} outside [0, {k}) (TOSA 1.0 REQUIRE 0 <= index < K)")
    return np.ascontiguousarray(np.take_along_axis(values, indices.astype(np.int64)[:, :, None], axis=1))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 GATHER: inputs ``values`` and ``indices`` (int32); no attribute fields."""
    t.emit("GATHER", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("Gather"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 GATHER: ``values`` (int8 / int16 / int32) and ``indices`` (int32)."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
