"""aten.upsample_nearest2d with integer scale factors -> RESIZE NEAREST; aten.upsample_bilinear2d ->
RESIZE BILINEAR + RESCALE.  One grid (``rules.SHARED``).

Bilinear: PyTorch samples output row ``r`` at input row ``src = (r + 1/2) * q - 1/2`` (clamped at 0;
``q = 1 / scale_factor`` when a factor is given, else ``H / OH``), or ``src = r * (H-1)/(OH-1)`` with
``align_corners=True``.  Both are TOSA RESIZE's ``y / n`` with integers: ``q = a / b`` gives
``n = 2b``, ``d = 2a``, ``offset = a - b`` (a negative ``y`` clamps to row 0, as PyTorch's clamp
does), align_corners ``n = OH - 1``, ``d = H - 1``, ``offset = 0``; each reduced by their gcd, and
``border`` such that the output has PyTorch's size.  RESIZE weighs the four codes exactly (the
weights sum to ``n_y * n_x``); the RESCALE by ``1 / (n_y * n_x)`` rounds once (half up): every output
is within 1/2 LSB of the exact interpolation of the input codes (exact where ``n_y * n_x`` is a power
of two, as for integer factors; else the multiplier's 2^-31 relative error adds to it).
"""
from __future__ import annotations

import math
from fractions import Fraction

from ... import rules
from ...errors import LoweringError
from ...fx import arg, fake_value, node_source
from ...ir import Op
from ...qmath import quantize_multiplier, quantize_multiplier_16

ATEN = ["aten.upsample_nearest2d", "aten.upsample_bilinear2d"]


def _bilinear_axis(size: int, out: int, align_corners: bool, factor) -> tuple[int, int, int, int] | str:
    """``(n, d, offset, border)`` of one axis, or the reason it has none within TOSA's limits."""
    if align_corners:
        if out == 1:
            n, d, off = 1, 1, 0
        elif size == 1:
            return "align_corners=True from a size-1 axis"
        else:
            n, d, off = out - 1, size - 1, 0
    else:
        q = Fraction(size, out) if factor is None else 1 / Fraction(float(factor)).limit_denominator(4096)
        if factor is not None and abs(float(1 / q) - float(factor)) > 1e-12 * abs(float(factor)):
            return f"scale factor {factor} (not a ratio of small integers)"
        n, d, off = 2 * q.denominator, 2 * q.numerator, q.numerator - q.denominator
    g = math.gcd(math.gcd(n, d), abs(off))
    n, d, off = n // g, d // g, off // g
    border = (out - 1) * d + off - (size - 1) * n
    if not (0 < n <= 2048 and 0 < d < 16 * n and -n <= off < 16 * n and -16 * n <= border < n):
        return f"{size} -> {out} (TOSA RESIZE scale {n}/{d}, offset {off}, border {border} outside its limits)"
    return n, d, off, border


def _bilinear_plan(node):
    """``([ny, dy, nx, dx], [oy, ox], [by, bx])`` of a captured upsample_bilinear2d, or the reason why not."""
    x, y = fake_value(node.args[0]), node.meta.get("val")
    if x is None or y is None:
        return None
    (h, w), (oh, ow) = x.shape[2:], y.shape[2:]
    align = bool(arg(node, 2, "align_corners", False))
    factors = arg(node, 3, "scale_factors", None)
    fy, fx = (None, None) if not factors or arg(node, 1, "output_size", None) else (factors[0], factors[-1])
    ay, ax = _bilinear_axis(int(h), int(oh), align, fy), _bilinear_axis(int(w), int(ow), align, fx)
    for a in (ay, ax):
        if isinstance(a, str):
            return a
    return [ay[0], ay[1], ax[0], ax[1]], [ay[2], ax[2]], [ay[3], ax[3]]


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    if rules.canonical_op(node.target) == "aten.upsample_bilinear2d":
        plan = _bilinear_plan(node)
        if not isinstance(plan, tuple):
            raise LoweringError(f"{src}: bilinear upsampling {plan}")
        scale, offset, border = plan
        acc_dtype = "int32" if x.dtype == "int8" else "int48"
        acc = ctx.temp(f"{node.name}_acc", out.shape, acc_dtype, x.scale)
        ctx.graph.add_op(Op("RESIZE", [x.name], [acc.name], {"mode": "BILINEAR", "scale": scale, "offset": offset,
                                                             "border": border}, src))
        m, s = (quantize_multiplier if acc_dtype == "int32" else quantize_multiplier_16)(1.0 / (scale[0] * scale[2]))
        ctx.graph.add_op(Op("RESCALE", [acc.name], [out.name], {"input_zp": 0, "output_zp": 0, "multiplier": [m],
                                                                "shift": [s], "scale32": acc_dtype == "int32"}, src))
        return
    n, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    if oh % h or ow % w:
        raise LoweringError(f"{src}: nearest upsampling {h}x{w} -> {oh}x{ow} is not an integer factor")
    ctx.graph.add_op(Op("RESIZE", [x.name], [out.name], {"mode": "NEAREST", "scale": [oh // h, ow // w]}, src))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration (NCHW)."""
    x, y = fake_value(node.args[0]), node.meta.get("val")
    if x is None or y is None:
        return None
    if x.dim() != 4:
        return f"on a {x.dim()}-D input (NCHW needed)"
    if rules.canonical_op(node.target) == "aten.upsample_bilinear2d":
        plan = _bilinear_plan(node)
        return plan if isinstance(plan, str) else None
    (h, w), (oh, ow) = x.shape[2:], y.shape[2:]
    if oh % h or ow % w:
        return f"{h}x{w} -> {oh}x{ow} (only integer scale factors)"
    return None
