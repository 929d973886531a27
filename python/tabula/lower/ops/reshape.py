"""aten.flatten / view / reshape -> RESHAPE (after a TRANSPOSE NHWC->NCHW when a 4-D activation
is involved, so the element order is PyTorch's)."""
from __future__ import annotations

from ...quantize.quantizer import node_source
from ..ir import LoweringError, Op

ATEN = ["aten.flatten", "aten.view", "aten.reshape"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if (x.scale, x.zero_point) != (out.scale, out.zero_point):
        raise LoweringError(f"{src}: {node.name} input and output qparams differ; quantize with tabula.quantize")
    if len(out.shape) == 4:
        raise LoweringError(f"{src}: reshape to a 4-D tensor is not supported yet")
    src_name = x.name
    if len(x.shape) == 4 and not (x.shape[1] == x.shape[2] == 1 or x.shape[3] == 1):
        n, h, w, c = x.shape
        t = ctx.temp(f"{node.name}_nchw", (n, c, h, w), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("TRANSPOSE", [x.name], [t.name], {"perms": [0, 3, 1, 2]}, src))
        src_name = t.name
    ctx.graph.add_op(Op("RESHAPE", [src_name], [out.name], {"shape": list(out.shape)}, src))
