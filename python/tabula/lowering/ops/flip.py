"""flip(x, dims) -> one REVERSE per dim, on the input's grid (``rules.SHARED``: codes copied)."""
from __future__ import annotations

from ...fx import node_source
from ...ir import Op
from ._common import device_axis

ATEN = ["aten.flip"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    rank = len(x.shape)
    axes = sorted({device_axis(int(d), rank) for d in node.args[1]})
    if not axes:
        ctx.graph.add_op(Op("RESHAPE", [x.name], [out.name], {"shape": list(out.shape)}, src))
        return
    cur = x
    for i, ax in enumerate(axes):
        nxt = out if i == len(axes) - 1 else ctx.temp(f"{node.name}_rev{ax}", x.shape, x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("REVERSE", [cur.name], [nxt.name], {"axis": ax}, src))
        cur = nxt
