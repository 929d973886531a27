"""RESIZE (nearest, integer upscaling): the executable spec of ``tabula_resize_nearest``.

Semantics: PyTorch ``upsample_nearest2d`` with integer scale factors on an NHWC tensor:
``out[n][y][x][c] = x[n][y // sy][x // sx][c]``; attrs ``mode`` = "NEAREST", ``scale`` = [sy, sx].
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "RESIZE"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    sy, sx = (int(v) for v in attrs["scale"])
    need(attrs.get("mode") == "NEAREST" and sy >= 1 and sx >= 1 and x.ndim == 4, OP,
         "RESIZE supports NEAREST with integer scale factors >= 1 on NHWC tensors")
    return np.ascontiguousarray(np.repeat(np.repeat(x, sy, axis=1), sx, axis=2))
