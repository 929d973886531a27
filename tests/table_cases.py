"""One typical case per table op of ``rules.TABLE`` (plus the extra-argument variants), with sensible
input qparams: the real input range an activation of that op would be calibrated to, the domain of
domain-limited ops (``rules.DOMAIN``) and fixed [-1, 1] grids for asin/acos/atanh.  Shared by
tests/test_tosa_conformance.py, tests/test_table_builders.py and benchmarks/table_error.py.

``single_table_graph(case, dtype)`` builds the IR a lowering produces for the op: TABLE (int8), or
TABLE -> int32 then RESCALE x 2^-7 -> int16 (int16), with table-exact output qparams.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tabula import qmath
from tabula.lower.ir import Graph, Op, Tensor
from tabula.quantize import rules
from tabula.report.tables import op_function


@dataclass(frozen=True)
class Case:
    function: str  # key of rules.TABLE
    lo: float  # calibrated real input range (int8: affine over it; int16: symmetric over max |.|)
    hi: float
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    domain: tuple[float, float] | None = None  # None: rules.DOMAIN's, if any
    fixed_grid: bool = False  # input grid fixed to [-1, 1]: int8 scale 1/127 zp 0

    @property
    def id(self) -> str:
        a = ",".join(str(v) for v in list(self.args) + [f"{k}={v}" for k, v in self.kwargs.items()])
        return self.function.replace("aten.", "") + (f"({a})" if a else "")

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


def single_table_graph(case: Case, dtype: str, shape=None) -> Graph:
    """The IR of one table op (as the lowering emits it) over an input of ``shape`` (default: every code)."""
    table, (s_in, zp_in), (s_out, zp_out) = build(case, dtype)
    n = 256 if dtype == "int8" else 65536
    shape = tuple(shape or (n,))
    attrs = {"function": case.function, "args": list(case.args), "kwargs": dict(case.kwargs),
             "domain": list(case.dom) if case.dom else None}
    g = Graph()
    g.add_tensor(Tensor("x", shape, dtype, s_in, zp_in))
    g.add_tensor(Tensor("table", table.shape, dtype), table)
    if dtype == "int8":
        g.add_tensor(Tensor("y", shape, "int8", s_out, zp_out))
        g.add_op(Op("TABLE", ["x", "table"], ["y"], attrs, case.id))
    else:
        m, s = qmath.TABLE16_RESCALE
        g.add_tensor(Tensor("acc", shape, "int32", s_out / 128.0, 0))
        g.add_tensor(Tensor("y", shape, "int16", s_out, 0))
        g.add_op(Op("TABLE", ["x", "table"], ["acc"], attrs, case.id))
        g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": 0, "multiplier": [m], "shift": [s],
                                                "scale32": True}, case.id))
    g.inputs, g.outputs = ["x"], ["y"]
    return g
