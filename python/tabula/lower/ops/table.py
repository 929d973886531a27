"""Table activations (silu, sigmoid, tanh, ... -- see ``rules.TABLE``) -> TABLE int8.

The 256 entries enumerate every input code and apply PyTorch's own float op with the node's extra
arguments (e.g. elu's alpha), so ``table[c + 128] == q(f(dq(c)))`` exactly (:func:`build_table_int8`).
"""
from __future__ import annotations

import torch

from ...qmath import QuantizationError, build_table_int8
from ...quantize import rules
from ...quantize.quantizer import node_source
from ..ir import LoweringError, Op

ATEN = sorted(rules.TABLE)


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if x.dtype != "int8":
        raise LoweringError(f"{src}: TABLE for {x.dtype} inputs is not supported yet")
    fn = rules.TABLE[rules.canonical_op(node.target)]
    extra, kwargs = node.args[1:], dict(node.kwargs)

    def f(v):
        return fn(torch.from_numpy(v), *extra, **kwargs).numpy()

    try:
        table = build_table_int8(f, x.scale, x.zero_point, out.scale, out.zero_point)
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e
    t = ctx.const(f"{node.name}_table", table, "int8")
    ctx.graph.add_op(Op("TABLE", [x.name, t.name], [out.name], {}, src))
