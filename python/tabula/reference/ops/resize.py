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


def repeat_and_offset(in_size: int, out_size: int, scale_n: int, scale_d: int, offset: int) -> tuple[int, int] | None:
    """``(s, t)`` when TOSA 1.0 RESIZE NEAREST along one axis reads input row ``(o + t) // s`` for every output row
    ``o`` (:func:`nearest_rows`): this spec's repeat by ``s``, then rows ``t .. t + out_size - 1`` of it, all inside
    ``in_size * s`` rows.  Integer upscales (``scale_n`` a multiple of ``scale_d``) give one: half up,
    ``t = (offset + scale_n // 2) // scale_d``.  None for every other map (downscaling, fractional scales, rows
    clamped at an edge)."""
    if scale_n % scale_d:
        return None
    s, t = scale_n // scale_d, (offset + scale_n // 2) // scale_d
    if t < 0 or out_size + t > in_size * s:
        return None
    rows = (np.arange(out_size, dtype=np.int64) + t) // s
    return (s, t) if np.array_equal(nearest_rows(in_size, out_size, scale_n, scale_d, offset), rows) else None


def from_tosa(r, top) -> None:
    """TOSA 1.0 RESIZE NEAREST -> RESIZE with integer scale ``[sy, sx]`` when TOSA's ``scale``, ``offset`` and
    ``border`` make every output row ``oy`` read input row ``oy // sy`` (and likewise along x; the export's
    ``2s/2, 1 - s, s - 1`` form), or -> RESIZE then SLICE when they read row ``(oy + ty) // sy``
    (:func:`repeat_and_offset`: an integer upscale whose rows round half up, e.g. ``2/1, 0, 0`` reads
    ``(oy + 1) // 2``, ``OH = 2 H - 1``).  Each candidate is checked row by row against :func:`nearest_rows`.
    BILINEAR, and NEAREST maps that are neither (downscaling, fractional scales, rows clamped at an edge),
    are unsupported: the kernel repeats each row ``s`` times."""
    mode = top.attrs.get("mode")
    if mode != "NEAREST":
        raise r.unsupported(top, "mode", mode, "tabula's RESIZE is NEAREST")
    scale, offset, border = (r.shape(top, i, k) for i, k in ((1, "scale"), (2, "offset"), (3, "border")))
    (n, h, w, c), _ = r.tosa_tensor(top.inputs[0])
    (_, oh, ow, _), _ = r.tosa_tensor(top.outputs[0])
    found = [repeat_and_offset(size, out, sn, sd, off)
             for size, out, (sn, sd), off in ((h, oh, scale[0:2], offset[0]), (w, ow, scale[2:4], offset[1]))]
    if None in found:
        raise r.unsupported(top, "scale / offset / border", f"{scale} / {offset} / {border}",
                            "tabula's RESIZE repeats each input row and column an integer number of times")
    (sy, ty), (sx, tx) = found
    x = r.input(top, 0)
    if (ty, tx) == (0, 0) and (oh, ow) == (h * sy, w * sx):
        r.emit(OP, top, [x], {"mode": "NEAREST", "scale": [sy, sx]})
        return
    rep = r.emit(OP, top, [x], {"mode": "NEAREST", "scale": [sy, sx]}, shape=(n, h * sy, w * sx, c))
    r.emit("SLICE", top, rep.outputs, {"start": [0, ty, tx, 0], "size": [n, oh, ow, c]})
