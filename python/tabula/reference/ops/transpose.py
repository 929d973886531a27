"""TRANSPOSE: the executable spec of ``tabula_transpose``.

Semantics: TOSA 1.0 TRANSPOSE.  Any dtype, rank 0..6; attrs ``perms``: output dim i is input dim
``perms[i]``, i.e. ``out[j] = x[k]`` with ``k[perms[i]] = j[i]`` (numpy ``transpose(x, perms)``).
Returns a C-contiguous array (the layout the device writes).
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "TRANSPOSE"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    perms = [int(p) for p in attrs["perms"]]
    need(sorted(perms) == list(range(x.ndim)), OP, f"perms {perms} do not permute {x.ndim} dims")
    return np.ascontiguousarray(np.transpose(x, perms))
