"""RESIZE: the spec of ``tabula_resize_nearest`` (NEAREST, integer upscaling) and
``tabula_resize_bilinear_s8`` / ``_s16`` (BILINEAR).

Semantics, NHWC tensors:

* ``mode`` "NEAREST", attrs ``scale`` [sy, sx] (integers >= 1): PyTorch ``upsample_nearest2d`` with
  integer factors, ``out[n][y][x][c] = x[n][y // sy][x // sx][c]``; any dtype, output the input's.
* ``mode`` "BILINEAR", attrs ``scale`` [ny, dy, nx, dx], ``offset`` [oy, ox], ``border`` [by, bx]:
  TOSA 1.0 RESIZE BILINEAR.  ``OH = ((H - 1) * ny - oy + by) // dy + 1`` (exact division required,
  as TOSA's ``idiv_check``; the same along x).  Output row ``r`` samples the input at ``y = r*dy + oy``
  in units of ``1/ny`` rows: ``iy = floor(y / ny)``, ``fy = y - iy*ny``, rows ``iy0 = clamp(iy)`` and
  ``iy1 = clamp(iy + 1)`` (clamped to ``[0, H-1]``), and

      out = x[iy0,ix0]*(ny-fy)*(nx-fx) + x[iy0,ix1]*(ny-fy)*fx + x[iy1,ix0]*fy*(nx-fx) + x[iy1,ix1]*fy*fx

  on the raw codes (no zero point: the weights sum to ``ny*nx``, so the zero point is carried
  through), int8 -> int32 and int16 -> int48 (TOSA).  A RESCALE by ``1/(ny*nx)`` follows in the IR.
  TOSA's limits (ERROR_IF): ``0 < n <= 2048``, ``0 < d < 16 n``, ``-n <= offset < 16 n``,
  ``-16 n <= border < n``.
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import TType, check_arrays, ints, n_inputs, need, no_macs

OP = "RESIZE"


def _bilinear_params(attrs) -> tuple[list[int], list[int], list[int]]:
    ny, dy, nx, dx = ints(OP, attrs, "scale", 4)
    oy, ox = ints(OP, attrs, "offset", 2)
    by, bx = ints(OP, attrs, "border", 2)
    for n, d, o, b in ((ny, dy, oy, by), (nx, dx, ox, bx)):
        need(0 < n <= 2048 and 0 < d < 16 * n, OP, f"scale n={n}, d={d} outside 0 < n <= 2048, 0 < d < 16 n (TOSA)")
        need(-n <= o < 16 * n and -16 * n <= b < n, OP, f"offset {o} / border {b} outside TOSA's limits for n={n}")
    return [ny, dy, nx, dx], [oy, ox], [by, bx]


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    mode = attrs.get("mode")
    need(x.rank == 4, OP, f"RESIZE takes NHWC tensors, got {x.shape}")
    n, h, w, c = x.shape
    if mode == "BILINEAR":
        need(x.dtype in ("int8", "int16"), OP, f"BILINEAR takes int8 or int16, got {x.dtype}")
        (ny, dy, nx, dx), (oy, ox), (by, bx) = _bilinear_params(attrs)
        sizes = []
        for size, sn, sd, so, sb in ((h, ny, dy, oy, by), (w, nx, dx, ox, bx)):
            num = (size - 1) * sn - so + sb
            need(num >= 0 and num % sd == 0, OP, f"((size-1)*n - offset + border) = {num} is not a multiple of d = {sd}")
            sizes.append(num // sd + 1)
        return TType((n, sizes[0], sizes[1], c), dtypes.ACC_DTYPE[x.dtype])
    sy, sx = ints(OP, attrs, "scale", 2)
    need(mode == "NEAREST" and sy >= 1 and sx >= 1, OP,
         "RESIZE supports NEAREST with integer scale factors >= 1, or BILINEAR with TOSA's scale, offset and border")
    return TType((n, h * sy, w * sx, c), x.dtype)


def _axis(size: int, out: int, n: int, d: int, off: int):
    """Per output coordinate: the two input indices and the weight of the second, ``f`` in [0, n)."""
    y = np.arange(out, dtype=np.int64) * d + off
    i = np.floor_divide(y, n)
    f = y - i * n
    return np.clip(i, 0, size - 1), np.clip(i + 1, 0, size - 1), f


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    x = inputs[0]
    if attrs.get("mode") != "BILINEAR":
        sy, sx = (int(v) for v in attrs["scale"])
        return np.ascontiguousarray(np.repeat(np.repeat(x, sy, axis=1), sx, axis=2))
    (ny, dy, nx, dx), (oy, ox), _ = _bilinear_params(attrs)
    _, h, w, _ = x.shape
    y0, y1, fy = _axis(h, out.shape[1], ny, dy, oy)
    x0, x1, fx = _axis(w, out.shape[2], nx, dx, ox)
    v = x.astype(np.int64)
    wy0, wy1 = (ny - fy)[None, :, None, None], fy[None, :, None, None]
    wx0, wx1 = (nx - fx)[None, None, :, None], fx[None, None, :, None]
    top = v[:, y0][:, :, x0] * wx0 + v[:, y0][:, :, x1] * wx1
    bot = v[:, y1][:, :, x0] * wx0 + v[:, y1][:, :, x1] * wx1
    acc = top * wy0 + bot * wy1
    return acc.astype(np.int32) if out.dtype == "int32" else acc


macs = no_macs
#: No accumulator to prove: BILINEAR's sum is at most ``n_y * n_x <= 2^22`` times a code (int8: 2^29
#: fits int32; int16: 2^37 fits int48), whatever the inputs.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 RESIZE.  BILINEAR: the IR's ``scale`` [ny, dy, nx, dx], ``offset`` and ``border`` as they
    are (CONST_SHAPE each), int8 -> int32 / int16 -> int48.  NEAREST: ``scale`` ``[2 sy, 2, 2 sx, 2]``,
    ``offset`` ``[1 - sy, 1 - sx]`` and ``border`` ``[sy - 1, sx - 1]``.  TOSA's nearest rounds half up:
    with ``y = 2 oy + 1 - sy`` it reads row ``floor((y + sy) / (2 sy)) = floor((2 oy + 1) / (2 sy)) = oy // sy``,
    this spec's floor, for every ``oy``; the border makes the output ``H * sy`` rows exactly
    (``OH = ((H - 1) * 2 sy - offset + border) / 2 + 1``); the same along x.  (The plain ``[sy, 1]`` scale
    with offset 0 would round ``oy / sy`` to nearest instead; this form is also the one Vela takes for the
    Ethos-U.  Checked on the TOSA reference model for scales 1 to 5: tests/tosa/test_tosa_export.py.)"""
    if op.attrs.get("mode") == "BILINEAR":
        a = op.attrs
        t.emit("RESIZE", [t.input(op, 0), t.shape([int(v) for v in a["scale"]]), t.shape([int(v) for v in a["offset"]]),
                          t.shape([int(v) for v in a["border"]])], [t.output(op)], t.attr("Resize", t.ResizeMode.BILINEAR))
        return
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
