"""One typical case per table op of ``rules.TABLE`` (plus the extra-argument variants), with sensible
input qparams: the real input range an activation of that op would be calibrated to, the domain of
domain-limited ops (``rules.DOMAIN``) and fixed [-1, 1] grids for asin/acos/atanh.  Shared by
the tests (TOSA conformance, table builders, codegen fusion) and benchmarks/table_error.py.

``table_op_graph(case, dtype)`` builds the IR the lowering produces for the op (the lowering's own
emitter): TABLE (int8); TABLE -> int32 then RESCALE x 2^-7 -> int16 (int16, one table); an int16
multi-table form (split, zoomed or tiled, tabula.qmath.Table16Plan); or for the piecewise-linear ops
their exact int16 ramps (tabula.qmath.piecewise) -- with table-exact output qparams.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tabula import qmath
from tabula.qmath.piecewise import EXACT_INT16, build_piecewise_int16
from tabula.ir import Graph, Op, Tensor
from tabula import rules
from tabula.report.tables import op_function


@dataclass(frozen=True)
class Case:
    function: str  # key of rules.TABLE
    lo: float  # calibrated real input range (int8: affine over it; int16: symmetric over max |.|)
    hi: float
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    domain: tuple[float, float] | None = None  # None: rules.DOMAIN's, if any
    fixed_grid: bool = False  # input grid fixed to [-1, 1]: int8 scale 1/127 zp 0; int16 the quantizer's

    @property
    def id(self) -> str:
        a = ",".join(str(v) for v in list(self.args) + [f"{k}={v}" for k, v in self.kwargs.items()])
        return self.function.replace("aten.", "").replace("tabula.", "") + (f"({a})" if a else "")

    @property
    def dom(self):
        if self.domain is not None:
            return self.domain
        d = rules.DOMAIN.get(self.function)
        return None if d is None else (d.lo, d.hi)

    def f(self):
        return op_function(self.function, self.args, self.kwargs)

    def in_qparams(self, dtype: str) -> tuple[float, int]:
        if dtype == "int16":
            if self.fixed_grid:  # as the a16w8 quantizer fixes it: 1/32767, atanh (open) 1/32768
                d = rules.DOMAIN[self.function]
                return (1.0 / 32768.0 if d.open else 1.0 / 32767.0), 0
            return max(abs(self.lo), abs(self.hi)) / 32767.0, 0
        if self.fixed_grid:
            return 1.0 / 127.0, 0
        lo, hi = min(self.lo, 0.0), max(self.hi, 0.0)
        scale = float(np.float32((hi - lo) / 255.0))
        return scale, int(np.clip(-128 - round(lo / scale), -128, 127))


CASES = [
    Case("aten.silu", -8, 8),
    Case("aten.sigmoid", -8, 8),
    Case("aten.tanh", -4, 4),
    Case("aten.gelu", -6, 6),
    Case("aten.gelu", -6, 6, kwargs={"approximate": "tanh"}),
    Case("aten.elu", -6, 6, args=(1.0,)),
    Case("aten.leaky_relu", -6, 6, args=(0.01,)),
    Case("aten.hardswish", -6, 6),
    Case("aten.hardsigmoid", -6, 6),
    Case("aten.softplus", -8, 8),
    Case("aten.exp", -6, 3),
    Case("aten.expm1", -4, 3),
    Case("aten.log", 0, 8),
    Case("aten.log1p", -0.9, 8),
    Case("aten.sqrt", 0, 16),
    Case("aten.rsqrt", 0, 16),
    Case("aten.reciprocal", 0, 16),
    Case("aten.erf", -3, 3),
    Case("aten.sin", -4, 4),
    Case("aten.cos", -4, 4),
    Case("aten.tan", -1.4, 1.4),
    Case("aten.atan", -8, 8),
    Case("aten.asin", -1, 1, fixed_grid=True),
    Case("aten.acos", -1, 1, fixed_grid=True),
    Case("aten.atanh", -1, 1, fixed_grid=True),
    Case("aten.sinh", -4, 4),
    Case("aten.cosh", -4, 4),
    Case("aten.asinh", -8, 8),
    Case("aten.acosh", 1, 8),
    Case("aten.pow", -4, 4, args=(2,)),
    Case("aten.pow", -3, 3, args=(3,)),
    Case("aten.pow", 0, 16, args=(0.5,), domain=(0.0, math.inf)),
    Case("aten.abs", -6, 6),
    Case("aten.mish", -8, 8),
    Case("aten.log2", 0, 8),
    Case("aten.log10", 0, 8),
    Case("aten.selu", -6, 6),
    Case("aten.celu", -6, 6, args=(0.5,)),
    Case("aten.erfinv", -1, 1, fixed_grid=True),
    Case("aten.logit", 0.01, 0.99),
    Case("aten.sign", -4, 4),
    Case("aten.round", -8, 8),
    Case("aten.ceil", -8, 8),
    Case("aten.floor", -8, 8),
    Case("tabula.softsign", -8, 8),
]


#: The input ranges of the sweep (benchmarks/table_error.py, issue 24): every table op over +-r for each r
#: (domain-limited ops over [their domain's start, r]), and the asymmetric ranges below.  An int16 grid is
#: symmetric over max |range|, so an asymmetric range gives the plan of +-max |range| (the sweep shows it).
SWEEP_RANGES = (0.5, 1, 2, 4, 8, 16, 24, 32, 40, 48, 64)
SWEEP_ASYMMETRIC = ((-2.0, 40.0), (-40.0, 3.0), (0.0, 64.0), (-0.5, 6.0), (-64.0, 1.0))


def sweep_cases(case: Case) -> list[Case]:
    """``case``'s function over :data:`SWEEP_RANGES` (and, for an op defined everywhere,
    :data:`SWEEP_ASYMMETRIC`): ``[-r, r]``; a domain-limited op ``[lo, r]`` from its typical range's
    start (log / sqrt / ... from 0, log1p from -0.9, acosh from 1); none for a fixed grid (asin, acos,
    atanh: their grid does not depend on calibration)."""
    if case.fixed_grid:
        return []
    one_sided = case.dom is not None or case.lo >= 0
    out = []
    for r in SWEEP_RANGES:
        lo, hi = (case.lo, max(float(r), case.lo + 0.5)) if one_sided else (-float(r), float(r))
        out.append(Case(case.function, lo, hi, case.args, case.kwargs, case.domain))
    if not one_sided:
        out += [Case(case.function, lo, hi, case.args, case.kwargs, case.domain) for lo, hi in SWEEP_ASYMMETRIC]
    return out


#: The worst case of the sweep per int16 form (2026-12-02: every one within 1 LSB), pinned C == Python
#: == TOSA on every code by tests/qmath/test_table_sweep.py.
SWEEP_WORST = [
    Case("aten.softplus", -0.5, 6),          # one table on +-6, 0.9997 LSB: the sweep's worst
    Case("aten.mish", -0.5, 6),              # one table on +-6, 0.999 (a table op since the ops25 merge)
    Case("aten.softplus", -4, 4),            # one table, 0.998 LSB
    Case("aten.expm1", -2, 2),               # one table, 0.998
    Case("aten.sigmoid", -32, 32),           # zoom2, 0.991
    Case("aten.gelu", -32, 32),              # zoom2, 0.988
    Case("aten.silu", -64, 64),              # zoom2 wide, 0.897
    Case("aten.hardsigmoid", -40, 40),       # ramps, 0.500 (issue 24: "7 LSB after a conv spanning +-40")
    Case("aten.hardswish", -64, 64),         # ramps + mul, 0.500
    Case("aten.leaky_relu", -64, 64, args=(0.01,)),  # ramps, 0.500
]


def build(case: Case, dtype: str, method: str = "minimax"):
    """(table, (s_in, zp_in), (s_out, zp_out)) for ``case`` in ``dtype`` with table-exact output qparams."""
    f = case.f()
    s_in, zp_in = case.in_qparams(dtype)
    s_out, zp_out = qmath.table_output_qparams(f, s_in, zp_in, dtype, domain=case.dom)
    if dtype == "int8":
        table = qmath.build_table_int8(f, s_in, zp_in, s_out, zp_out, domain=case.dom)
    else:
        table = qmath.build_table_int16(f, s_in, s_out, domain=case.dom, method=method)
    return table, (s_in, zp_in), (s_out, zp_out)


def build_plan(case: Case, form: str | None = None):
    """(plan, (s_in, 0), (s_out, 0)): the int16 :class:`~tabula.qmath.Table16Plan` for ``case`` --
    the lowering's choice (``form=None``) or a given form: ``single``, ``split``, ``zoom<k>``,
    ``zoom<k>+split``, ``tiled``.  Memoised per (case, form): plans are deterministic and the tiled
    ones take seconds."""
    key = (case.id, case.lo, case.hi, case.domain, case.fixed_grid, form)
    if key not in _PLANS:
        _PLANS[key] = _build_plan(case, form)
    return _PLANS[key]


_PLANS: dict = {}


def _build_plan(case: Case, form: str | None):
    f, dom = case.f(), case.dom
    s_in, _ = case.in_qparams("int16")
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16", domain=dom)
    if form is None and case.function in EXACT_INT16:  # the exact integer form the lowering picks
        plan = build_piecewise_int16(case.function, case.args, case.kwargs, f, s_in, s_out)
    elif form is None:
        plan = qmath.build_table_int16_plan(f, s_in, s_out, domain=dom)
    elif form == "single":
        plan = qmath.Table16Plan((qmath.Table16Term(0, qmath.build_table_int16(f, s_in, s_out, domain=dom)),))
    elif form == "split":
        plan = qmath.build_table_int16_split(f, s_in, s_out, domain=dom)
    elif form == "tiled":
        plan = qmath.build_table_int16_tiled(f, s_in, s_out, domain=dom)
    else:
        zoom, _, split = form.partition("+")
        plan = qmath.build_table_int16_zoom(f, s_in, s_out, int(zoom[4:]), split=bool(split), domain=dom)
    return plan, (s_in, 0), (s_out, 0)


def table_op_graph(case: Case, dtype: str, shape=None, form: str | None = None) -> Graph:
    """The IR of one table op as the lowering emits it (its own emitter), over an input ``x`` of
    ``shape`` (default: every code) to the output ``y``; int16 ``form`` as :func:`build_plan`."""
    from tabula.lowering.ops.table import emit_int16
    from tabula.lowering.pipeline import LoweringContext

    n = 256 if dtype == "int8" else 65536
    shape = tuple(shape or (n,))
    attrs = {"function": case.function, "args": list(case.args), "kwargs": dict(case.kwargs),
             "domain": list(case.dom) if case.dom else None}
    g = Graph()
    g.inputs, g.outputs = ["x"], ["y"]
    if dtype == "int8":
        table, (s_in, zp_in), (s_out, zp_out) = build(case, dtype)
        g.add_tensor(Tensor("x", shape, dtype, s_in, zp_in))
        g.add_tensor(Tensor("table", table.shape, dtype), table)
        g.add_tensor(Tensor("y", shape, "int8", s_out, zp_out))
        g.add_op(Op("TABLE", ["x", "table"], ["y"], attrs, case.id))
        return g
    plan, (s_in, _), (s_out, _) = build_plan(case, form)
    x = g.add_tensor(Tensor("x", shape, dtype, s_in, 0))
    y = g.add_tensor(Tensor("y", shape, "int16", s_out, 0))
    emit_int16(LoweringContext(None, g), "op", x, y, case.f(), attrs, case.id, plan=plan)
    return g


#: The singular-end sweep: each domain-limited op on inputs reaching 2^-10 of its singular end, on the
#: grid the a16w8 quantizer gives it -- asin / acos / atanh on their fixed grids (1/32767, atanh
#: 1/32768), acosh and log1p calibrated over the sweep range and clipped to the domain.
SINGULAR_CASES = [
    Case("aten.asin", -1 + 2**-10, 1 - 2**-10, fixed_grid=True),
    Case("aten.acos", -1 + 2**-10, 1 - 2**-10, fixed_grid=True),
    Case("aten.atanh", -1 + 2**-10, 1 - 2**-10, fixed_grid=True),
    Case("aten.acosh", 1 + 2**-10, 8),
    Case("aten.log1p", -1 + 2**-10, 8),
]


def sweep_sqnr(case: Case, plan, points: int | None = None) -> dict:
    """Output SQNR (dB) against float f over the real inputs of ``case`` ([lo, hi]): every int16 code
    whose value lies in the range (``points=None``), or ``points`` evenly spaced values quantized to the
    grid (round half to even, as PyTorch).  ``device``: the int16 ``plan`` dequantized; ``ideal``: the
    exact f of the quantized input rounded to the output grid (what a perfect table gives).

    Points where f is infinite (a pole's own code, which saturates) are left out.

    Returns ``{"device": dB, "ideal": dB, "max_lsb": device error against f(dq(x)) in output LSB}``.
    """
    f, dom = case.f(), case.dom
    s_in, _ = case.in_qparams("int16")
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16", domain=dom)
    if points is None:
        codes = np.arange(max(int(np.ceil(case.lo / s_in)), -32768), min(int(np.floor(case.hi / s_in)), 32767) + 1)
        x = codes * np.float64(s_in)
    else:
        x = np.linspace(case.lo, case.hi, points)
        codes = np.clip(np.rint(x / s_in), -32767, 32767).astype(np.int64)
    xq = codes * np.float64(s_in)
    clip = (lambda v: v) if dom is None else (lambda v: np.clip(v, *dom))
    with np.errstate(all="ignore"):
        exact = np.asarray(f(clip(x)), dtype=np.float64)
        fq = np.asarray(f(clip(xq)), dtype=np.float64) / s_out
    dev = qmath.table16_apply(plan, codes).astype(np.float64)
    ok = np.isfinite(exact) & np.isfinite(fq)  # a pole's own code saturates: no finite error to count
    exact, fq, dev = exact[ok], fq[ok], dev[ok]
    ideal = np.clip(np.rint(fq), -32768, 32767)

    def sqnr(y):
        return float(10 * np.log10(np.sum(exact**2) / np.sum((y * s_out - exact) ** 2)))

    return {"device": sqnr(dev), "ideal": sqnr(ideal), "max_lsb": float(np.abs(dev - np.clip(fq, -32768, 32767)).max())}
