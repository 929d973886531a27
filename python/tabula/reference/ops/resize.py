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
    """TOSA 1.0 RESIZE NEAREST: inputs ``x``, ``scale`` ``[2 sy, 2, 2 sx, 2]``, ``offset`` ``[1 - sy, 1 - sx]``
    and ``border`` ``[sy - 1, sx - 1]`` (CONST_SHAPE each).  TOSA's nearest rounds half up: with
    ``y = 2 oy + 1 - sy`` it reads row ``floor((y + sy) / (2 sy)) = floor((2 oy + 1) / (2 sy)) = oy // sy``,
    this spec's floor, for every ``oy``; the border makes the output ``H * sy`` rows exactly
    (``OH = ((H - 1) * 2 sy - offset + border) / 2 + 1``); the same along x.  (The plain ``[sy, 1]`` scale
    with offset 0 would round ``oy / sy`` to nearest instead; this form is also the one Vela takes for the
    Ethos-U.  Checked on the TOSA reference model for scales 1 to 5: tests/tosa/test_tosa_export.py.)"""
    sy, sx = (int(v) for v in op.attrs["scale"])
    t.emit("RESIZE", [t.input(op, 0), t.shape([2 * sy, 2, 2 * sx, 2]), t.shape([1 - sy, 1 - sx]), t.shape([sy - 1, sx - 1])],
           [t.output(op)], t.attr("Resize", t.ResizeMode.NEAREST))
