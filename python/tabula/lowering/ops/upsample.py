"""aten.upsample_nearest2d with integer scale factors -> RESIZE NEAREST (shared qparams)."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import fake_value, node_source
from ...ir import Op

ATEN = ["aten.upsample_nearest2d"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
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
    (h, w), (oh, ow) = x.shape[2:], y.shape[2:]
    if oh % h or ow % w:
        return f"{h}x{w} -> {oh}x{ow} (only integer scale factors)"
    return None
