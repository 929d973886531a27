"""Table activations (``rules.TABLE``) -> TABLE.

int8: 256 entries enumerating every input code: ``table[c + 128] == q(f(dq(c)))`` with PyTorch's
own float op (and the node's extra arguments, e.g. elu's alpha) and PyTorch's rounding.
int16: 513 entries (TOSA interpolation) -> int32 in 1/128 output LSB, then RESCALE x 2^-7; where that
single table errs by more than 1 output LSB (int16 sigmoid beyond about +-3, tanh beyond +-2), the
cheapest multi-table form that is within 1 LSB (else the most accurate): knots in 1/128 LSB held in two
tables (``hi * 2^7 + lo``), a zoomed centre table indexed by ``x * 2^k`` plus a table for the rest, or a
backbone with zoomed corrections around singular points (:class:`tabula.qmath.Table16Plan`,
:func:`emit_int16`).  The piecewise-linear ops (leaky_relu, hardsigmoid, hardswish, elu's linear part;
:data:`tabula.qmath.piecewise.EXACT_INT16`) are exact integer ramps in int16 instead
(:func:`tabula.qmath.piecewise.build_piecewise_int16`: CLAMP, RESCALE, ADD/SUB, MUL).
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
from ...qmath.piecewise import EXACT_INT16, build_piecewise_int16

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
        elif name in EXACT_INT16:
            if int(x.zero_point) != 0 or int(out.zero_point) != 0:
                raise LoweringError(f"{src}: int16 table ops need symmetric int16 input and output (zero point 0)")
            plan = build_piecewise_int16(name, extra, kwargs, f, x.scale, out.scale)
            emit_int16(ctx, node.name, x, out, f, attrs, src, plan=plan)
        else:
            plan = _int16_plan(name, extra, kwargs, f, x.scale, out.scale, domain)
            emit_int16(ctx, node.name, x, out, f, attrs, src, plan=plan)
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e


#: int16 plans already built: (op, its arguments, input scale, output scale, domain) -> plan.  An unrolled
#: recurrence asks for the same gate table at every step (one grid per role over the steps); the search
#: takes up to a second per plan.
_PLANS: dict[tuple, object] = {}


def _int16_plan(name: str, extra: list, kwargs: dict, f, in_scale: float, out_scale: float, domain):
    """:func:`tabula.qmath.build_table_int16_plan` of ``f`` (the aten op ``name`` with ``extra`` /
    ``kwargs``), memoized on everything it depends on."""
    from ...qmath import build_table_int16_plan

    key = (name, repr(extra), repr(sorted(kwargs.items())), float(in_scale), float(out_scale), domain)
    if key not in _PLANS:
        if len(_PLANS) >= 256:
            _PLANS.clear()
        _PLANS[key] = build_table_int16_plan(f, in_scale, out_scale, domain=domain)
    return _PLANS[key]


def emit_int16(ctx, base: str, x, out, f, attrs: dict, src: str, plan=None) -> None:
    """Append the IR of an int16 table op ``out = f(x)`` (int16 [...] -> int16 [...], zero points 0):
    the :class:`tabula.qmath.Table16Plan` chosen by :func:`tabula.qmath.build_table_int16_plan` (or
    ``plan``), op for op as :func:`tabula.qmath.table16_apply` computes it:

    one table     ``TABLE(x, t) -> acc`` (int32, 16.7), ``RESCALE acc x 2^-7 -> out``;
    several       the indexes: per centre c != 0 ``TABLE(x, shift table) -> int32`` (128 (x - c),
                  :func:`tabula.qmath.centre_table`), per (centre, zoom k > 0) ``RESCALE`` to int16
                  (x * 2^k, or the shift table's output x 2^(k-7)); ``TABLE(idx, hi)`` per term; then
                  either (no lo, no ramps) ``ADD`` them and ``RESCALE x 2^-7 -> out``, or per term
                  ``RESCALE x 2^7`` (+ ``ADD TABLE(idx, lo)``), per ramp ``CLAMP`` x then ``RESCALE``
                  to int32, ``ADD``/``SUB`` everything, ``RESCALE x 2^-frac_bits -> out`` (or
                  ``RESCALE x -> int32``, ``MUL``, ``RESCALE -> out`` for a product).

    The group's first op carries ``attrs`` (``function``, ``args``, ``kwargs``, ``domain``) plus
    ``output`` (the int16 result's name), ``internal`` (the names of the op's intermediate tensors:
    codegen runs the whole sequence as one kernel, :mod:`tabula.codegen.fusion`) and, beyond one table,
    ``input`` (x's name), ``terms`` (``[{"zoom", "centre", "hi", "lo"}]``), ``ramps``, ``product`` and
    ``frac_bits``; the group's other TABLEs carry ``{"part": ...}``.
    Raises QuantizationError from the table builder."""
    from ...qmath import (
        TABLE16_FRAC_BITS,
        build_table_int16_plan,
        centre_rescale,
        centre_table,
        quantize_multiplier,
        zoom_rescale,
    )

    if int(x.zero_point) != 0 or int(out.zero_point) != 0:
        raise LoweringError(f"{src}: int16 table ops need symmetric int16 input and output (zero point 0), "
                            f"got {x.zero_point} and {out.zero_point}")
    if plan is None:
        dom = attrs.get("domain")
        plan = build_table_int16_plan(f, x.scale, out.scale,
                                      domain=None if dom is None else (float(dom[0]), float(dom[1])))
    s_out = float(out.scale)
    g = ctx.graph
    internal: list[str] = []  # the group's intermediates (codegen fuses the group: codegen/fusion/)
    head = dict(attrs, output=out.name, internal=internal)
    first = [True]

    def temp(name, shape, dtype, scale):
        t = ctx.temp(name, shape, dtype, scale)
        internal.append(t.name)
        return t

    def add(op: Op) -> None:
        if first[0]:
            op.attrs.update(head)
            first[0] = False
        g.add_op(op)

    def rescale(a, b, m: int, sh: int) -> None:
        add(Op("RESCALE", [a.name], [b.name], {"input_zp": 0, "output_zp": 0, "multiplier": [int(m)],
                                               "shift": [int(sh)], "scale32": True}, src))

    if len(plan.terms) == 1 and not plan.wide and plan.terms[0].zoom == 0 and not plan.terms[0].centre:
        t = ctx.const(f"{base}_table", plan.terms[0].hi, "int16")
        acc = temp(f"{base}_interp", out.shape, "int32", s_out / 128.0)
        add(Op("TABLE", [x.name, t.name], [acc.name], {}, src))
        rescale(acc, out, *quantize_multiplier(2.0**-7))
        return
    names = []
    for n, t in enumerate(plan.terms):
        names.append({"zoom": t.zoom, "centre": t.centre,
                      "hi": ctx.const(f"{base}_table{n}_hi", t.hi, "int16").name,
                      "lo": None if t.lo is None else ctx.const(f"{base}_table{n}_lo", t.lo, "int16").name})
    head.update(terms=names, input=x.name)
    if plan.ramps:
        head["ramps"] = [dict(lo=r.lo, hi=r.hi, multiplier=r.multiplier, shift=r.shift, sign=r.sign) for r in plan.ramps]
    if plan.product is not None:
        p = plan.product
        head["product"] = dict(mul_shift=p.mul_shift, multiplier=p.multiplier, shift=p.shift)
    if plan.wide:
        head["frac_bits"] = plan.frac_bits
    if plan.final is not None:
        head["final"] = [int(v) for v in plan.final]

    shifted = {}
    for c in plan.centres:  # 128 * saturate16(x - c), exact
        t = ctx.const(f"{base}_shift{n_name(c)}", centre_table(c), "int16")
        shifted[c] = temp(f"{base}_shifted{n_name(c)}", x.shape, "int32", float(x.scale) / 128.0)
        add(Op("TABLE", [x.name, t.name], [shifted[c].name], {"part": f"shift{c}"}, src))
    index = {(0, 0): x}
    for c, k in plan.indexes:
        index[(c, k)] = temp(f"{base}_zoom{k}{n_name(c)}", x.shape, "int16", float(x.scale) / 2**k)
        if c == 0:
            assert quantize_multiplier(2.0**k) == zoom_rescale(k)
            rescale(x, index[(c, k)], *zoom_rescale(k))
        else:
            assert quantize_multiplier(2.0 ** (k - 7)) == centre_rescale(k)
            rescale(shifted[c], index[(c, k)], *centre_rescale(k))
    def table(n: int, part: str, scale: float):
        v = temp(f"{base}_interp{n}_{part}", out.shape, "int32", scale)
        add(Op("TABLE", [index[(names[n]["centre"], names[n]["zoom"])].name, names[n][part]], [v.name],
               {"part": f"{part}{n}"}, src))
        return v

    def join(a, b, sign: int, name: str, scale: float):
        s_ = temp(name, out.shape, "int32", scale)
        add(Op("ADD" if sign > 0 else "SUB", [a.name, b.name], [s_.name], {}, src))
        return s_

    if not plan.wide:
        h = None
        for n in range(len(names)):
            v = table(n, "hi", s_out / 128.0)
            h = v if h is None else join(h, v, 1, f"{base}_sum_hi{n}", s_out / 128.0)
        rescale(h, out, *quantize_multiplier(2.0**-7))
        return
    fine = s_out / 2.0**plan.frac_bits
    parts: list[tuple[int, object]] = []
    for n, t in enumerate(plan.terms):
        assert plan.frac_bits == 7 + TABLE16_FRAC_BITS
        h = table(n, "hi", s_out / 128.0)
        v = temp(f"{base}_interp{n}_up", out.shape, "int32", fine)
        rescale(h, v, *quantize_multiplier(2.0**TABLE16_FRAC_BITS))
        if t.lo is not None:
            v = join(v, table(n, "lo", fine), 1, f"{base}_part{n}", fine)
        parts.append((1, v))
    for n, r in enumerate(plan.ramps):
        c = temp(f"{base}_clamp{n}", x.shape, "int16", float(x.scale))
        add(Op("CLAMP", [x.name], [c.name], {"min": int(r.lo), "max": int(r.hi)}, src))
        v = temp(f"{base}_ramp{n}", out.shape, "int32", fine)
        rescale(c, v, r.multiplier, r.shift)
        parts.append((r.sign, v))
    parts.sort(key=lambda sv: -sv[0])  # a positive part first: SUB needs a minuend
    if parts[0][0] < 0:
        raise LoweringError(f"{src}: an int16 plan needs at least one added term")
    acc = parts[0][1]
    for n, (sign, v) in enumerate(parts[1:]):
        acc = join(acc, v, sign, f"{base}_acc{n}", fine)
    if plan.product is None:
        rescale(acc, out, *(plan.final or (1 << 30, 30 + plan.frac_bits)))
        return
    p = plan.product
    x32 = temp(f"{base}_x32", x.shape, "int32", float(x.scale))
    rescale(x, x32, 1 << 30, 30)
    prod = temp(f"{base}_product", out.shape, "int32", None)
    add(Op("MUL", [acc.name, x32.name], [prod.name], {"shift": int(p.mul_shift)}, src))
    rescale(prod, out, p.multiplier, p.shift)


def n_name(c: int) -> str:
    """A tensor-name suffix for centre ``c``: ``_m32768`` / ``_32768``; empty for 0."""
    return "" if c == 0 else (f"_m{-c}" if c < 0 else f"_{c}")


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration."""
    name = rules.canonical_op(node.target)
    extra, kwargs = list(node.args[1:]), dict(node.kwargs)
    if name == "aten.pow" and not (len(extra) == 1 and isinstance(extra[0], numbers.Number)):
        return "with a tensor exponent (only a constant scalar exponent)"
    if any(isinstance(a, torch.fx.Node) for a in extra + list(kwargs.values())):
        return "with a tensor argument (a TABLE needs constant arguments)"
    return None
