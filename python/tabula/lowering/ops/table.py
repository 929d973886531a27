"""Table activations (``rules.TABLE``) -> TABLE.

int8: 256 entries enumerating every input code: ``table[c + 128] == q(f(dq(c)))`` with PyTorch's
own float op (and the node's extra arguments, e.g. elu's alpha) and PyTorch's rounding.
int16: 513 entries (TOSA interpolation) -> int32 in 1/128 output LSB, then RESCALE x 2^-7; where that
single table errs by more than 1 output LSB (int16 sigmoid beyond about +-3, tanh beyond +-2), the
cheapest multi-table form that is within 1 LSB (else the most accurate): knots in 1/128 LSB held in two
tables (``hi * 2^7 + lo``), and/or a zoomed centre table indexed by ``x * 2^k`` plus a table for the
rest (:class:`tabula.qmath.Table16Plan`, :func:`emit_int16`).
Domain-limited ops (``rules.DOMAIN``) evaluate f on inputs clipped to the domain, so an edge code
(int8 -128 on a fixed [-1, 1] grid) gives f at the edge, and poles saturate.
The op records ``function``, ``args`` and ``domain`` so reports can recompute the error bound.
"""
from __future__ import annotations

import numbers

import torch

from ... import rules
from ...errors import LoweringError
from ...fx import node_source
from ...ir import Op
from ...qmath import QuantizationError, build_table_int8

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


def emit_int16(ctx, base: str, x, out, f, attrs: dict, src: str, plan=None) -> None:
    """Append the IR of an int16 table op ``out = f(x)`` (int16 [...] -> int16 [...], zero points 0):
    the :class:`tabula.qmath.Table16Plan` chosen by :func:`tabula.qmath.build_table_int16_plan` (or
    ``plan``), op for op as :func:`tabula.qmath.table16_apply` computes it:

    one table     ``TABLE(x, t) -> acc`` (int32, 16.7), ``RESCALE acc x 2^-7 -> out``;
    several       ``RESCALE x x 2^k`` per zoom k (int16), ``TABLE(idx, hi)`` per term summed with ADD,
                  then ``RESCALE x 2^-7 -> out``, or when split ``RESCALE x 2^7``, ``ADD`` the
                  ``TABLE(idx, lo)`` terms, ``RESCALE x 2^-14 -> out``.

    The first TABLE carries ``attrs`` (``function``, ``args``, ``kwargs``, ``domain``) plus ``output``
    (the int16 result's name), ``internal`` (the names of the op's intermediate tensors: codegen runs
    the whole sequence as one kernel, :mod:`tabula.codegen.fuse`) and, for several tables, ``terms``
    and ``input`` (x's name: the first TABLE may read a zoomed index); the others carry ``{"part": ...}``.
    Raises QuantizationError from the table builder."""
    from ...qmath import TABLE16_FRAC_BITS, build_table_int16_plan, quantize_multiplier, zoom_rescale

    if int(x.zero_point) != 0 or int(out.zero_point) != 0:
        raise LoweringError(f"{src}: int16 table ops need symmetric int16 input and output (zero point 0), "
                            f"got {x.zero_point} and {out.zero_point}")
    if plan is None:
        dom = attrs.get("domain")
        plan = build_table_int16_plan(f, x.scale, out.scale,
                                      domain=None if dom is None else (float(dom[0]), float(dom[1])))
    s_out = float(out.scale)
    g = ctx.graph
    internal: list[str] = []  # the group's intermediates (codegen fuses the group: codegen/fuse.py)
    attrs = dict(attrs, output=out.name, internal=internal)

    def temp(name, shape, dtype, scale):
        t = ctx.temp(name, shape, dtype, scale)
        internal.append(t.name)
        return t

    if len(plan.terms) == 1 and not plan.split:
        t = ctx.const(f"{base}_table", plan.terms[0].hi, "int16")
        acc = temp(f"{base}_interp", out.shape, "int32", s_out / 128.0)
        g.add_op(Op("TABLE", [x.name, t.name], [acc.name], attrs, src))
        ctx.rescale(acc, out, src, scale=2.0**-7)
        return
    index = {0: x}
    for k in sorted({t.zoom for t in plan.terms} - {0}):
        assert quantize_multiplier(2.0**k) == zoom_rescale(k)
        index[k] = temp(f"{base}_zoom{k}", x.shape, "int16", float(x.scale) / 2**k)
        ctx.rescale(x, index[k], src, scale=2.0**k)
    names = [{"zoom": t.zoom, "hi": ctx.const(f"{base}_table{n}_hi", t.hi, "int16").name,
              "lo": None if t.lo is None else ctx.const(f"{base}_table{n}_lo", t.lo, "int16").name}
             for n, t in enumerate(plan.terms)]
    attrs["terms"], attrs["input"] = names, x.name

    def summed(part: str, scale: float):
        total = None
        for n, t in enumerate(names):
            if t[part] is None:
                continue
            v = temp(f"{base}_interp{n}_{part}", out.shape, "int32", scale)
            first = total is None and part == "hi"
            g.add_op(Op("TABLE", [index[t["zoom"]].name, t[part]], [v.name], attrs if first else {"part": f"{part}{n}"}, src))
            if total is not None:
                s = temp(f"{base}_sum_{part}{n}", out.shape, "int32", scale)
                g.add_op(Op("ADD", [total.name, v.name], [s.name], {}, src))
                v = s
            total = v
        return total

    h = summed("hi", s_out / 128.0)
    if not plan.split:
        ctx.rescale(h, out, src, scale=2.0**-7)
        return
    fine = s_out / 2.0 ** (7 + TABLE16_FRAC_BITS)
    h7 = temp(f"{base}_interp_hi_up", out.shape, "int32", fine)
    ctx.rescale(h, h7, src, scale=2.0**TABLE16_FRAC_BITS)
    lo = summed("lo", fine)
    acc = temp(f"{base}_interp", out.shape, "int32", fine)
    g.add_op(Op("ADD", [h7.name, lo.name], [acc.name], {}, src))
    ctx.rescale(acc, out, src, scale=2.0 ** -(7 + TABLE16_FRAC_BITS))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration."""
    name = rules.canonical_op(node.target)
    extra, kwargs = list(node.args[1:]), dict(node.kwargs)
    if name == "aten.pow" and not (len(extra) == 1 and isinstance(extra[0], numbers.Number)):
        return "with a tensor exponent (only a constant scalar exponent)"
    if any(isinstance(a, torch.fx.Node) for a in extra + list(kwargs.values())):
        return "with a tensor argument (a TABLE needs constant arguments)"
    return None
