"""RESIZE (nearest, integer upscaling): the spec of ``tabula_resize_nearest``.

Semantics: PyTorch ``upsample_nearest2d`` with integer scale factors on an NHWC tensor:
``out[n][y][x][c] = x[n][y // sy][x // sx][c]``; attrs ``mode`` = "NEAREST", ``scale`` = [sy, sx].
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, ints, n_inputs, need

OP = "RESIZE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    sy, sx = ints(OP, attrs, "scale", 2)
    need(attrs.get("mode") == "NEAREST" and sy >= 1 and sx >= 1 and x.rank == 4, OP,
         "RESIZE supports NEAREST with integer scale factors >= 1 on NHWC tensors")
    n, h, w, c = x.shape
    return TType((n, h * sy, w * sx, c), x.dtype)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    sy, sx = (int(v) for v in attrs["scale"])
    return np.ascontiguousarray(np.repeat(np.repeat(inputs[0], sy, axis=1), sx, axis=2))
