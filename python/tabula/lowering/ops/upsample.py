"""aten.upsample_nearest2d with integer scale factors -> RESIZE NEAREST (shared qparams)."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import node_source
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
