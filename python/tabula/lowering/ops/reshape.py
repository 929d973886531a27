"""aten.flatten / view / reshape / unsqueeze / squeeze / unflatten -> RESHAPE, in PyTorch's element order.

A 4-D activation is NHWC on the device: it is first transposed to NCHW (unless that is a no-op in
memory: H = W = 1 or C = 1), reshaped, and a 4-D result is transposed back to NHWC.
"""
from __future__ import annotations

from ...fx import node_source
from ...ir import Op

ATEN = ["aten.flatten", "aten.view", "aten.reshape", "aten.unsqueeze", "aten.squeeze", "aten.unflatten"]


def _trivial(shape_nhwc) -> bool:
    _, h, w, c = shape_nhwc
    return (h == 1 and w == 1) or c == 1


def lower(ctx, node) -> None:
    x, out = ctx.shared(node)
    reshape_to(ctx, node, x, out)


def reshape_to(ctx, node, x, out) -> None:
    """Append the ops that give ``out`` the elements of ``x`` in PyTorch's (row-major, NCHW) order:
    a RESHAPE, with a TRANSPOSE NHWC -> NCHW before it when ``x`` is 4-D and one NCHW -> NHWC after it
    when ``out`` is (each left out where the element order does not change).  One grid."""
    src = node_source(node)
    cur = x
    if len(x.shape) == 4 and not _trivial(x.shape):
        n, h, w, c = x.shape
        cur = ctx.temp(f"{node.name}_nchw", (n, c, h, w), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("TRANSPOSE", [x.name], [cur.name], {"perms": [0, 3, 1, 2]}, src))
    if len(out.shape) == 4 and not _trivial(out.shape):
        n, h, w, c = out.shape
        logical = ctx.temp(f"{node.name}_nchw_out", (n, c, h, w), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("RESHAPE", [cur.name], [logical.name], {"shape": list(logical.shape)}, src))
        ctx.graph.add_op(Op("TRANSPOSE", [logical.name], [out.name], {"perms": [0, 2, 3, 1]}, src))
    else:
        ctx.graph.add_op(Op("RESHAPE", [cur.name], [out.name], {"shape": list(out.shape)}, src))
