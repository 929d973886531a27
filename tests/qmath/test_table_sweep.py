"""The int16 table sweep's worst cases (benchmarks/table_error.py, section 5; table_cases.SWEEP_WORST):
within 1 output LSB of the exact f on every code, and C == Python == the TOSA reference model on every
code and intermediate; an interior pole refused in one line; and, in a model, an activation after a
conv whose output spans +-40 equals q(f(dq(x))) within one output code (issue 24)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import run_table_graph_c
from tabula import qmath
from tabula import tosa as T
from tabula.reference.interpreter import run_graph
from tabula.report.table_cases import SWEEP_WORST, Case, build_plan, table_op_graph
from tabula.report.tables import table_of

ALL16 = np.arange(-32768, 32768, dtype=np.int16)


@pytest.mark.host
@pytest.mark.parametrize("case", SWEEP_WORST, ids=[f"{c.id}[{c.lo:g},{c.hi:g}]" for c in SWEEP_WORST])
def test_the_sweeps_worst_cases_are_within_1_lsb_and_c_python_tosa_agree(case, kernel_lib):
    if T.unavailable():
        pytest.skip(T.unavailable())
    plan, (s_in, _), (s_out, _) = build_plan(case)
    err = qmath.table_error_lsb(case.f(), plan, s_in, 0, s_out, 0, "int16", domain=case.dom)
    assert err["max_lsb"] <= 1.0 and err["saturated"] == 0
    g = table_op_graph(case, "int16")
    g.outputs = [o.outputs[0] for o in g.ops]  # every intermediate and the result
    ref = dict(zip(g.outputs, run_graph(g, [ALL16])))
    tosa = dict(zip(g.outputs, T.run_graph(g, [ALL16])))
    c = run_table_graph_c(g, ALL16, kernel_lib)
    for n in g.outputs:
        np.testing.assert_array_equal(tosa[n], ref[n], err_msg=n)
        np.testing.assert_array_equal(c[n], ref[n], err_msg=n)
    head = next(o for o in g.ops if "function" in o.attrs)
    np.testing.assert_array_equal(kernel_lib.table16(ALL16, table_of(g, head)), ref["y"])  # the fused kernel


def test_a_pole_inside_the_range_is_refused_naming_where():
    with pytest.raises(qmath.QuantizationError, match=r"jumps by \d+ output LSB between input codes -25736 and "
                                                      r"-25735 \(x = -1.5708.*keep the op's input range on one side"):
        build_plan(Case("aten.tan", -2, 2))  # (on one side of the poles, [-1.4, 1.4]: tests/tosa's CASES)


@pytest.mark.parametrize("act", ["hardsigmoid", "hardswish", "gelu"])
def test_after_a_conv_spanning_40_the_activation_is_q_f_dq(act):
    """The issue's context: a16w8, a conv whose output spans about +-40, then the activation on the grid
    the conv gives it -- the program's output against q(f(dq(x))) of that grid, every element."""
    import tabula
    from tabula.reference.interpreter import op_functions

    f = getattr(torch.nn.functional, act)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.nn.Conv2d(3, 8, 3, padding=1)
            with torch.no_grad():
                self.c.weight.mul_(15.0)

        def forward(self, x):
            return f(self.c(x))

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(16, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    p = tabula.lower(tabula.quantize(m, (x[:1],), x, scheme="a16w8"))
    g = p.graph
    head = next(o for o in g.ops if o.attrs.get("function"))
    mid = g.tensors[head.attrs.get("input", head.inputs[0])]
    out = g.tensors[g.outputs[0]]
    assert 30 < mid.scale * 32767 < 60
    fns = op_functions()
    xi = qmath.quantize_round_half_even(x.permute(0, 2, 3, 1).numpy()[:4], *p.input_qparams[0][:2], "int16")
    for i in range(len(xi)):
        env = dict(g.constants)
        env[g.inputs[0]] = xi[i:i + 1]
        for op in g.ops:
            env[op.outputs[0]] = np.asarray(fns[op.op]([env[n] for n in op.inputs],
                                                       {**op.attrs, "output_dtype": g.tensors[op.outputs[0]].dtype}))
        v = env[mid.name].astype(np.float64) * mid.scale
        want = np.clip(np.rint(f(torch.from_numpy(v)).numpy() / out.scale), -32768, 32767)
        assert np.abs(env[g.outputs[0]] - want).max() <= (0 if act != "gelu" else 1)
