"""Table activations (``rules.TABLE``) -> TABLE.

int8: 256 entries enumerating every input code: ``table[c + 128] == q(f(dq(c)))`` with PyTorch's
own float op (and the node's extra arguments, e.g. elu's alpha) and PyTorch's rounding.
int16: 513 entries (TOSA interpolation) -> int32 in 1/128 output LSB, then RESCALE x 2^-7; where that
single table errs by more than 1 output LSB (int16 sigmoid beyond about +-3, tanh beyond +-2) and a
split table does better, two tables with knots in 1/128 LSB (``hi * 2^7 + lo``):
``TABLE hi -> RESCALE x 2^7 -> ADD (TABLE lo) -> RESCALE x 2^-14`` (:func:`emit_int16`).
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
            emit_int16(ctx, node.name, x, out, f, attrs, src)
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e


def emit_int16(ctx, base: str, x, out, f, attrs: dict, src: str, tables=None) -> None:
    """Append the IR of an int16 table op ``out = f(x)`` (int16 [...] -> int16 [...], zero points 0)
    built by :func:`tabula.qmath.build_table_int16_auto`:

    single table  ``TABLE(x, t) -> acc (int32, 16.7)``, ``RESCALE acc x 2^-7 -> out``;
    split table   ``TABLE(x, hi) -> a``, ``RESCALE a x 2^7 -> a8`` (int32), ``TABLE(x, lo) -> b``,
                  ``ADD(a8, b) -> acc`` (int32, 16.14), ``RESCALE acc x 2^-14 -> out``.

    The (first) TABLE carries ``attrs`` (``function``, ``args``, ``kwargs``, ``domain``) plus
    ``output`` (the int16 result's name) and, when split, ``lo_table`` (the ``lo`` constant's name);
    the ``lo`` TABLE carries ``{"part": "lo"}``.  ``tables``: ``(table, None)`` or ``(hi, lo)`` to emit
    instead of building them (tests).  Raises QuantizationError from the table builder."""
    from ...qmath import TABLE16_FRAC_BITS, build_table_int16_auto

    dom = attrs.get("domain")
    hi, lo = tables if tables is not None else build_table_int16_auto(
        f, x.scale, out.scale, domain=None if dom is None else (float(dom[0]), float(dom[1])))
    s_out = float(out.scale)
    t = ctx.const(f"{base}_table", hi, "int16")
    attrs = dict(attrs, output=out.name)
    if lo is None:
        acc = ctx.temp(f"{base}_interp", out.shape, "int32", s_out / 128.0)
        ctx.graph.add_op(Op("TABLE", [x.name, t.name], [acc.name], attrs, src))
        ctx.rescale(acc, out, src, scale=2.0**-7)
        return
    fine = s_out / 2.0 ** (7 + TABLE16_FRAC_BITS)
    t_lo = ctx.const(f"{base}_table_lo", lo, "int16")
    attrs["lo_table"] = t_lo.name
    a = ctx.temp(f"{base}_interp_hi", out.shape, "int32", s_out / 128.0)
    ctx.graph.add_op(Op("TABLE", [x.name, t.name], [a.name], attrs, src))
    a8 = ctx.temp(f"{base}_interp_hi_up", out.shape, "int32", fine)
    ctx.rescale(a, a8, src, scale=2.0**TABLE16_FRAC_BITS)
    b = ctx.temp(f"{base}_interp_lo", out.shape, "int32", fine)
    ctx.graph.add_op(Op("TABLE", [x.name, t_lo.name], [b.name], {"part": "lo"}, src))
    acc = ctx.temp(f"{base}_interp", out.shape, "int32", fine)
    ctx.graph.add_op(Op("ADD", [a8.name, b.name], [acc.name], {}, src))
    ctx.rescale(acc, out, src, scale=2.0 ** -(7 + TABLE16_FRAC_BITS))
