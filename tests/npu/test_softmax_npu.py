"""The NPU form of the softmax (tabula.qmath.softmax_npu, tabula.npu.legalize_softmax_pass): no INTDIV, no
TILE, REDUCE_MAX on the input dtype; the same exps and row sums as the CPU form, the output within its
proven bound of the exact softmax, and the legalized IR equal to the plan's arithmetic, to the TOSA
reference model and (kws, ic: tests/npu/test_npu_plans.py) to the CPU form on real data."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.ir import Graph
from tabula.npu import legalize
from tabula.qmath.softmax import build_softmax_plan, softmax_apply, softmax_exp
from tabula.qmath.softmax_npu import build_softmax_npu_plan, exp_digit_tables, softmax_npu_apply
from tabula.reference.interpreter import run_graph
from tabula.report import softmax_cases as cases


@pytest.mark.parametrize("dtype,length", [("int8", 2), ("int8", 12), ("int8", 1000), ("int16", 10), ("int16", 1000)])
def test_npu_form_keeps_the_exps_and_stays_within_its_bound(dtype, length, rng):
    s_out, zp_out, qmin, qmax = cases.output_grid(dtype)
    for scale in cases.SCALES[dtype][1:4]:
        scale = float(np.float32(scale))
        cpu = build_softmax_plan(scale, dtype, length, s_out, zp_out)
        npu = build_softmax_npu_plan(scale, dtype, length, s_out, zp_out)
        assert (npu.base.exp_hi == cpu.exp_hi).all() and npu.base.e_max == cpu.e_max
        assert npu.s_min == int(softmax_exp(cpu, np.zeros(1, np.int64))[0]) and npu.s_max == length * cpu.e_max
        assert npu.error_bound_lsb < 1.49 * (1 if dtype == "int8" else 32767 / 256)
        for x in cases.rows(dtype, length, scale, rng, n=16).values():
            y, yc = softmax_npu_apply(npu, x).astype(np.int64), softmax_apply(cpu, x).astype(np.int64)
            exact = np.clip(cases.exact_reference(x, scale), qmin, qmax)
            assert np.abs(y - exact).max() <= npu.error_bound_lsb + 1e-9
            assert np.abs(y - yc).max() <= 1
    if dtype == "int8":  # the three int8 digit tables hold every knot of the int8 exp
        d = np.arange(-255, 1)
        hi, mid, lo = (t.astype(np.int64) for t in exp_digit_tables(cpu))
        assert ((hi << 16) + (mid << 8) + lo == softmax_exp(cpu, d)).all()


def test_npu_form_agrees_with_the_cpu_form_on_short_int8_rows(rng):
    """The MLPerf classifier heads (10, 12 classes) at their scales: not one output differs."""
    s_out, zp_out, _, _ = cases.output_grid("int8")
    for length, scale in [(10, 0.0625), (12, 0.1)]:
        cpu = build_softmax_plan(scale, "int8", length, s_out, zp_out)
        npu = build_softmax_npu_plan(scale, "int8", length, s_out, zp_out)
        x = rng.integers(-128, 128, (2000, length)).astype(np.int8)
        assert (softmax_npu_apply(npu, x) == softmax_apply(cpu, x)).all()
        assert npu.steps == {10: 4, 12: 5}[length]


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_legalized_classifier_runs_the_npu_arithmetic(npu_model, scheme, rng):
    """softmax_classifier: after legalize no INTDIV / TILE / int32 REDUCE_MAX is left, the IR computes
    softmax_npu_apply of its logits, and the TOSA reference model agrees bit for bit."""
    program, _ = npu_model("softmax_classifier", scheme)
    g, kept = legalize(program.graph, "ethos-u55-128")
    assert kept == []
    ops = [o.op for o in g.ops]
    assert "INTDIV" not in ops and "TILE" not in ops and "INTDIV" in [o.op for o in program.graph.ops]
    (mx,) = [o for o in g.ops if o.op == "REDUCE_MAX"]
    assert g.tensors[mx.inputs[0]].dtype == ("int8" if scheme == "int8" else "int16")
    meta = g.ops[ops.index("REDUCE_MAX")].attrs["softmax"]
    x, y = g.tensors[meta["input"]], g.tensors[meta["output"]]
    plan = build_softmax_npu_plan(float(x.scale), x.dtype, meta["row_len"], float(y.scale), y.zero_point)
    assert meta["form"] == "npu" and meta["steps"] == plan.steps
    t_in = g.tensors[g.inputs[0]]
    lo, hi = (-128, 127) if t_in.dtype == "int8" else (-32767, 32767)
    ins = [rng.integers(lo, hi, (1,) + tuple(t_in.shape[1:]), endpoint=True).astype(t_in.np_dtype) for _ in range(8)]
    logits_of = Graph(tensors=g.tensors, ops=g.ops, inputs=g.inputs, outputs=[meta["input"]], constants=g.constants)
    for xi in ins:
        out = run_graph(g, [xi])[0]
        assert (out == softmax_npu_apply(plan, run_graph(logits_of, [xi])[0], axis=meta["axis"])).all()
        cpu = run_graph(program.graph, [xi])[0]
        assert np.abs(out.astype(np.int64) - cpu).max() <= 1
    from tabula import tosa

    if tosa.unavailable() is None:
        for xi in ins[:3]:
            assert (tosa.run_graph(g, [xi])[0] == run_graph(g, [xi])[0]).all()


def test_a_row_the_npu_form_cannot_take_keeps_the_cpu_form(npu_model, monkeypatch):
    """With the Newton-Raphson steps capped below what the row needs, legalize keeps the CPU form and
    says why; the partitioner then puts its INTDIV on the CPU."""
    import tabula.qmath.softmax_npu as sn

    program, _ = npu_model("softmax_classifier", "int8")
    monkeypatch.setattr(sn, "NPU_MAX_STEPS", 1)
    g, kept = legalize(program.graph, "ethos-u55-128")
    assert [o.op for o in g.ops] == [o.op for o in program.graph.ops]
    assert len(kept) == 1 and "keeps its CPU form" in kept[0] and "1 Newton-Raphson steps" in kept[0]
