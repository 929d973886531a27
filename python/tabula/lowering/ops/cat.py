"""cat / concat -> CONCAT (every input and the output share one grid: a plain copy)."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import arg, node_source
from ...ir import Op
from ._common import device_axis

ATEN = ["aten.cat", "aten.concat"]


def lower(ctx, node) -> None:
    src = node_source(node)
    xs = [ctx.input(a, node) for a in node.args[0]]
    out = ctx.output(node)
    for t in xs:
        if (t.scale, t.zero_point) != (out.scale, out.zero_point):
            raise LoweringError(f"{src}: cat input {t.name} has its own qparams; quantize with tabula.quantize")
    axis = device_axis(int(arg(node, 1, "dim", 0)), len(out.shape))
    ctx.graph.add_op(Op("CONCAT", [t.name for t in xs], [out.name], {"axis": axis}, src))
