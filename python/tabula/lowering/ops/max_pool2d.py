"""aten.max_pool2d -> MAX_POOL2D (input and output share qparams, so no RESCALE)."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import arg, node_source
from ...ir import Op
from ._common import pair

ATEN = ["aten.max_pool2d"]


def unsupported(node) -> str | None:
    """Why this captured max_pool2d cannot be lowered (listed before calibration), or None."""
    if pair(arg(node, 4, "dilation", 1), 1) != [1, 1]:
        return "with dilation > 1 (TOSA pooling has none)"
    if arg(node, 5, "ceil_mode", False):
        return "with ceil_mode=True"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    kernel = pair(node.args[1], None)
    stride = pair(arg(node, 2, "stride", None) or kernel, kernel)
    ph, pw = pair(arg(node, 3, "padding", 0), 0)
    if pair(arg(node, 4, "dilation", 1), 1) != [1, 1] or arg(node, 5, "ceil_mode", False):
        raise LoweringError(f"{src}: max_pool2d with dilation or ceil_mode=True is not supported yet")
    if (x.scale, x.zero_point) != (out.scale, out.zero_point):
        raise LoweringError(f"{src}: max_pool2d input and output qparams differ; quantize with tabula.quantize")
    ctx.graph.add_op(Op("MAX_POOL2D", [x.name], [out.name], {"kernel": kernel, "stride": stride, "pad": [ph, ph, pw, pw]}, src))
