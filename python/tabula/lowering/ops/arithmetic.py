"""add / sub / mul of two activations -> RESCALE to int32, ADD / SUB / MUL, RESCALE to the output.

ADD/SUB (as TFLite/TOSA lowerings do): both inputs go to a common int32 grid
``sc = 2 * max(s_a, s_b) / 2^L`` (L = 20 for int8, 15 for int16), so ``(x - zp) * s / sc`` keeps
L-1 extra bits and the sum fits int32; the result is rescaled by ``sc / s_out``.
MUL: both inputs to int32 at scale 1 (zero point removed), product in int32, rescaled by
``s_a * s_b / s_out``.  Broadcasting and scalar operands are not supported yet.
"""
from __future__ import annotations

from ... import rules
from ...errors import LoweringError
from ...fx import node_source
from ...ir import Op

ATEN = ["aten.add", "aten.sub", "aten.mul"]

LEFT_SHIFT = {"int8": 20, "int16": 15}


def lower(ctx, node) -> None:
    src = node_source(node)
    name = rules.canonical_op(node.target)
    if len(node.args) < 2 or not all(hasattr(a, "op") for a in node.args[:2]):
        raise LoweringError(f"{src}: {name} with a scalar operand is not supported yet (use a tensor)")
    if node.kwargs.get("alpha", 1) != 1:
        raise LoweringError(f"{src}: {name} with alpha != 1 is not supported")
    a, b = ctx.input(node.args[0], node), ctx.input(node.args[1], node)
    out = ctx.output(node)
    if a.shape != b.shape:
        raise LoweringError(f"{src}: {name} of shapes {a.shape} and {b.shape}: broadcasting is not supported yet")
    if name == "aten.mul":
        sa = sb = 1.0
        final = float(a.scale) * float(b.scale) / float(out.scale)
    else:
        sc = 2.0 * max(float(a.scale), float(b.scale)) / 2.0 ** LEFT_SHIFT[a.dtype]
        sa, sb, final = float(a.scale) / sc, float(b.scale) / sc, sc / float(out.scale)
    ia = ctx.temp(f"{node.name}_a32", a.shape, "int32")
    ib = ctx.temp(f"{node.name}_b32", b.shape, "int32")
    ctx.rescale(a, ia, src, scale=sa)
    ctx.rescale(b, ib, src, scale=sb)
    acc = ctx.temp(f"{node.name}_acc", out.shape, "int32")
    op = {"aten.add": "ADD", "aten.sub": "SUB", "aten.mul": "MUL"}[name]
    ctx.graph.add_op(Op(op, [ia.name, ib.name], [acc.name], {"shift": 0} if op == "MUL" else {}, src))
    ctx.rescale(acc, out, src, scale=final)
