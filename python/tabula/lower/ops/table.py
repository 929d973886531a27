"""Table activations (``rules.TABLE``) -> TABLE.

int8: 256 entries enumerating every input code: ``table[c + 128] == q(f(dq(c)))`` with PyTorch's
own float op (and the node's extra arguments, e.g. elu's alpha) and PyTorch's rounding.
int16: 513 entries (TOSA interpolation) -> int32 in 1/128 output LSB, then RESCALE x 2^-7.
Domain-limited ops (``rules.DOMAIN``) evaluate f on inputs clipped to the domain, so an edge code
(int8 -128 on a fixed [-1, 1] grid) gives f at the edge, and poles saturate.
The op records ``function``, ``args`` and ``domain`` so reports can recompute the error bound.
"""
from __future__ import annotations

import numbers

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
    name = rules.canonical_op(node.target)
    fn = rules.TABLE[name]
    extra, kwargs = list(node.args[1:]), dict(node.kwargs)
    if name == "aten.pow" and not (len(extra) == 1 and isinstance(extra[0], numbers.Number)):
        raise LoweringError(f"{src}: pow is a TABLE only with a constant scalar exponent")
    if any(isinstance(a, torch.fx.Node) for a in extra + list(kwargs.values())):
        raise LoweringError(f"{src}: {name} with a tensor argument cannot be a TABLE")
    dom = rules.domain_of(name, extra)
    domain = (dom.lo, dom.hi) if dom is not None else None

    def f(v):
        return fn(torch.from_numpy(v), *extra, **kwargs).numpy()

    attrs = {"function": name, "args": extra, "kwargs": kwargs, "domain": list(domain) if domain else None}
    try:
        if x.dtype == "int8":
            table = build_table_int8(f, x.scale, x.zero_point, out.scale, out.zero_point, domain=domain)
            t = ctx.const(f"{node.name}_table", table, "int8")
            ctx.graph.add_op(Op("TABLE", [x.name, t.name], [out.name], attrs, src))
        else:
            from ...qmath import build_table_int16

            table = build_table_int16(f, x.scale, out.scale, domain=domain)
            t = ctx.const(f"{node.name}_table", table, "int16")
            acc = ctx.temp(f"{node.name}_interp", out.shape, "int32", float(out.scale) / 128.0)
            ctx.graph.add_op(Op("TABLE", [x.name, t.name], [acc.name], attrs, src))
            ctx.rescale(acc, out, src, scale=2.0**-7)
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e
