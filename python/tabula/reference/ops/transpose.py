"""TRANSPOSE: the spec of ``tabula_transpose``.

Semantics: TOSA 1.0 TRANSPOSE.  Any dtype, rank 0..6; attrs ``perms``: output dim i is input dim
``perms[i]``, i.e. ``out[j] = x[k]`` with ``k[perms[i]] = j[i]`` (numpy ``transpose(x, perms)``).
Returns a C-contiguous array (the layout the device writes).
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "TRANSPOSE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    perms = [int(p) for p in attrs["perms"]]
    need(sorted(perms) == list(range(x.rank)), OP, f"perms {perms} do not permute {x.rank} dims")
    return TType(tuple(x.shape[p] for p in perms), x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    return np.ascontiguousarray(np.transpose(inputs[0], [int(p) for p in attrs["perms"]]))


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 TRANSPOSE: input ``x``; attribute ``perms``."""
    t.emit("TRANSPOSE", [t.input(op, 0)], [t.output(op)], t.attr("Transpose", [int(p) for p in op.attrs["perms"]]))


def from_tosa(r, top) -> None:
    """TOSA 1.0 TRANSPOSE: attribute ``perms``."""
    r.emit(OP, top, [r.input(top, 0)], {"perms": [int(p) for p in top.attrs["perms"]]})
