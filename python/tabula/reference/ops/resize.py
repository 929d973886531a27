"""RESIZE (nearest, integer upscaling): the spec of ``tabula_resize_nearest``.

Semantics: PyTorch ``upsample_nearest2d`` with integer scale factors on an NHWC tensor:
``out[n][y][x][c] = x[n][y // sy][x // sx][c]``; attrs ``mode`` = "NEAREST", ``scale`` = [sy, sx].
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, ints, n_inputs, need, no_macs

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


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 RESIZE NEAREST: inputs ``x``, ``scale`` ``[sy, 1, sx, 1]``, ``offset`` and ``border``
    (CONST_SHAPE [2] each).  TOSA's nearest rounds half up: ``iy = floor((oy + offset) / sy)`` plus one
    when the remainder is at least ``sy / 2``; ``offset = -(sy // 2)`` turns that into this spec's
    ``oy // sy`` for every ``oy``, and ``border = sy - 1 - sy // 2`` makes the output ``H * sy`` rows
    (``OH = ((H - 1) * sy - offset + border) / 1 + 1``); the same along x.  (Checked on the TOSA reference
    model for scales 1 to 5: tests/tosa/test_tosa_export.py.)"""
    sy, sx = (int(v) for v in op.attrs["scale"])
    t.emit("RESIZE", [t.input(op, 0), t.shape([sy, 1, sx, 1]), t.shape([-(sy // 2), -(sx // 2)]),
                      t.shape([sy - 1 - sy // 2, sx - 1 - sx // 2])], [t.output(op)], t.attr("Resize", t.ResizeMode.NEAREST))
