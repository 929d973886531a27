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


def nearest_rows(in_size: int, out_size: int, scale_n: int, scale_d: int, offset: int) -> np.ndarray:
    """The input row (or column) TOSA 1.0 RESIZE NEAREST reads for each of ``out_size`` output rows:
    ``y = o * scale_d + offset``, ``i = floor(y / scale_n)``, the next row when ``2 (y - i * scale_n) >= scale_n``
    (the remainder is at least half: the reference model's rounding, checked on 338 scale / offset / border
    combinations), clamped to ``[0, in_size)``."""
    y = np.arange(out_size, dtype=np.int64) * scale_d + offset
    i = np.floor_divide(y, scale_n)
    i = np.where(2 * (y - i * scale_n) >= scale_n, i + 1, i)
    return np.clip(i, 0, in_size - 1)


def from_tosa(r, top) -> None:
    """TOSA 1.0 RESIZE -> RESIZE NEAREST with integer scale ``[sy, sx]`` when, and only when, TOSA's ``scale``,
    ``offset`` and ``border`` make every output row ``oy`` read input row ``oy // sy`` with ``OH = H * sy`` (and
    likewise along x): checked row by row with :func:`nearest_rows` (the export's ``2s/2, 1 - s, s - 1`` form;
    ``2/1, -1, 0`` too, where ``2/1, 0, 1`` rounds half up instead).  BILINEAR, and NEAREST maps that are not
    such a repeat (downscaling, fractional or shifted scales), are unsupported: the kernel repeats each row
    ``s`` times."""
    mode = top.attrs.get("mode")
    if mode != "NEAREST":
        raise r.unsupported(top, "mode", mode, "tabula's RESIZE is NEAREST")
    scale, offset, border = (r.shape(top, i, k) for i, k in ((1, "scale"), (2, "offset"), (3, "border")))
    (n, h, w, c), _ = r.tosa_tensor(top.inputs[0])
    (_, oh, ow, _), _ = r.tosa_tensor(top.outputs[0])
    factors = []
    for size, out, (sn, sd), off in ((h, oh, scale[0:2], offset[0]), (w, ow, scale[2:4], offset[1])):
        k = out // size
        if out != k * size or k < 1 or not np.array_equal(nearest_rows(size, out, sn, sd, off), np.arange(out) // k):
            raise r.unsupported(top, "scale / offset / border", f"{scale} / {offset} / {border}",
                                "tabula's RESIZE repeats each input row and column an integer number of times")
        factors.append(int(k))
    r.emit(OP, top, [r.input(top, 0)], {"mode": "NEAREST", "scale": factors})
