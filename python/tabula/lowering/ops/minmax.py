"""maximum / minimum of two tensors -> MAXIMUM / MINIMUM on int32 codes: both share the output's grid
(``rules.JOINING_ARGS``), so ``max(q(a), q(b)) == q(max(a, b))`` exactly::

    a32 = RESCALE(a, x1) - zp,  b32 likewise,  m = MAXIMUM(a32, b32),  out = RESCALE(m, x1) + zp

(TOSA 1.0 MAXIMUM / MINIMUM take int32 only.)  Operands of lower rank are RESHAPEd to the output's rank."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import canonical_op, node_source
from ...ir import Op
from .compare import aligned, codes32

ATEN = ["aten.maximum", "aten.minimum"]


def lower(ctx, node) -> None:
    src = node_source(node)
    out = ctx.output(node)
    rank = len(out.shape)
    a = aligned(ctx, node, ctx.input(node.args[0], node), rank, "a")
    b = aligned(ctx, node, ctx.input(node.args[1], node), rank, "b")
    for t in (a, b):
        if (t.scale, t.zero_point) != (out.scale, out.zero_point):
            raise LoweringError(f"{src}: {node.name} operand {t.name} has its own grid; quantize with tabula.quantize")
    op = "MAXIMUM" if canonical_op(node.target) == "aten.maximum" else "MINIMUM"
    m = ctx.temp(f"{node.name}_{op.lower()}", out.shape, "int32", out.scale)
    ctx.graph.add_op(Op(op, [codes32(ctx, node, a, "a").name, codes32(ctx, node, b, "b").name], [m.name], {}, src))
    ctx.rescale(m, out, src, scale=1.0)
