"""Issue 25's table ops of one activation at model level: selu, celu, erfinv (on a tanh: its fixed open
grid), the steps sign / round / ceil / floor, and softsign (``F.softsign``'s abs / add / div fused into one
TABLE before quantization).  int8: every output equals PT2E's simulation of the same quantized graph
(a TABLE is ``q(f(dq(c)))``); a16w8: within 1 LSB of it (the steps exactly, ties aside).  One a16w8 host
build runs the model bit-exact against the Python reference (the fused int16 kernel, steps included)."""
from __future__ import annotations

import ast
import re

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tabula
from helpers import scons


class Tables(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):  # [1, 8]
        y = self.fc(x) * 3.0
        return (F.selu(y), F.celu(y, 0.5), torch.erfinv(torch.tanh(y)), torch.sign(y), torch.round(y),
                torch.ceil(y), torch.floor(y), F.softsign(y))


def _build(scheme):
    torch.manual_seed(5)
    model, x = Tables().eval(), torch.randn(24, 8)
    gm = tabula.quantize(model, (x[:1],), x[:16], scheme=scheme)
    return model, x, gm, tabula.lower(gm)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_table_ops_equal_pt2e_simulation(scheme):
    _, x, gm, program = _build(scheme)
    ops = [o.op for o in program.graph.ops]
    assert "INTDIV" not in ops and "TABLE" in ops
    worst = []
    for t in x[16:]:
        with torch.no_grad():
            sims = [s.numpy() for s in gm(t[None])]
        for i, (got, sim, q) in enumerate(zip(program.run(t[None].numpy()), sims, program.output_qparams)):
            lsb = np.abs(got - sim).max() / q.scale
            worst.append(lsb)
            # a16w8 erfinv (i == 2) reads tanh's int16 output, itself up to 1 LSB from the simulation's
            # (a table plan), and erfinv's slope on its fixed grid is above 1 near +-1: measured 2.0 LSB
            assert lsb <= (1e-3 if scheme == "int8" else (2.0 if i == 2 else 1.0) + 1e-2), (i, lsb)  # 1e-2: float32 dequantized values
    if scheme == "a16w8":  # the steps are exact: sign, round, ceil, floor (outputs 3..6)
        for t in x[16:20]:
            with torch.no_grad():
                sims = [s.numpy() for s in gm(t[None])]
            for got, sim in list(zip(program.run(t[None].numpy()), sims))[3:7]:
                np.testing.assert_array_equal(got, sim)


@pytest.mark.host
def test_table_ops_bit_exact_on_host_a16w8(tmp_path):
    torch.manual_seed(5)
    model, x = Tables().eval(), torch.randn(24, 8)
    torch.export.save(torch.export.export(model, (x[:1],)), tmp_path / "m.pt2")
    np.savez(tmp_path / "calib.npz", x=x[:16].numpy())
    np.savez(tmp_path / "test.npz", x=x[16:].numpy())
    scons("board=host", "scheme=a16w8", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'm.pt2'}",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}", "name=tables")
    r = json.loads((tmp_path / "b" / "host" / "tables-a16w8" / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0


class LogSoftmax(nn.Module):
    def forward(self, x):
        return F.log_softmax(x, -1)


@pytest.mark.parametrize("scheme,n,amp,measured", [
    ("int8", 10, 2.0, 1.10), ("int8", 100, 2.0, 1.51), ("a16w8", 10, 2.0, 1.34), ("a16w8", 100, 2.0, 1.34),
])
def test_log_softmax_within_its_bound_of_the_exact_log_softmax(scheme, n, amp, measured):
    """log_softmax as d = x - amax(x), d - log(sum(exp(d))) (the decomposition pass): against the exact
    log_softmax of the dequantized input codes, within the stated bound
    (decompose_ops_pass.log_softmax_error_bound: 2.1 / 5.4 LSB int8, 2.3 / 5.5 a16w8 here) and within the measured
    worst (pinned: 1.09 / 1.50 int8, 1.33 / 1.33 a16w8);
    against PT2E's simulation exact in int8, 1 LSB in a16w8 (roundings half up vs half to even)."""
    from tabula.quantizer.decompose_ops_pass import log_softmax_error_bound

    torch.manual_seed(0)
    x = torch.randn(64, n) * amp
    gm = tabula.quantize(LogSoftmax().eval(), (x[:1],), x, scheme=scheme)
    program = tabula.lower(gm)
    g, q, qi = program.graph, program.output_qparams[0], program.input_qparams[0]
    lo, hi = (-128, 127) if scheme == "int8" else (-32767, 32767)
    fn = {o.attrs["function"]: o for o in g.ops if "function" in o.attrs}

    def out_scale(o):
        return g.tensors[o.attrs.get("output", o.outputs[0])].scale

    bound = log_softmax_error_bound(n, g.tensors[fn["aten.exp"].inputs[0]].scale, out_scale(fn["aten.exp"]),
                                    g.tensors[fn["aten.log"].inputs[0]].scale, out_scale(fn["aten.log"]), q.scale)
    worst = 0.0
    for t in x:
        got = program.run(t[None].numpy())[0].ravel()
        with torch.no_grad():
            sim = gm(t[None]).numpy().ravel()
        xd = (np.clip(np.rint(t.numpy() / qi.scale) + qi.zero_point, lo, hi) - qi.zero_point) * qi.scale
        exact = xd - xd.max() - np.log(np.sum(np.exp(xd - xd.max())))
        worst = max(worst, np.abs(got - exact).max() / q.scale)
        assert np.abs(got - sim).max() / q.scale <= (1e-3 if scheme == "int8" else 1.0 + 1e-2)
    assert worst <= measured <= bound, (worst, bound)


class Remainder(nn.Module):
    def forward(self, x):
        return x % 0.7, torch.fmod(x, 0.5), torch.remainder(x, -0.6)


def _three_tables_on_every_code(model_cls):
    """``model_cls``'s int8 program (calibrated on seeded N(0, 2^2) rows of 256), which must be three TABLEs, the 256
    input codes' real values and PT2E's simulation on them: ``(calib, program, x, sims)``."""
    torch.manual_seed(0)
    calib = torch.randn(8, 256) * 2
    gm = tabula.quantize(model_cls().eval(), (calib[:1],), calib)
    program = tabula.lower(gm)
    assert [o.op for o in program.graph.ops] == ["TABLE"] * 3
    q = program.input_qparams[0]
    x = ((np.arange(-128, 128) - q.zero_point) * np.float32(q.scale)).astype(np.float32)[None]
    with torch.no_grad():
        sims = [s.numpy() for s in gm(torch.from_numpy(x))]
    return calib, program, x, sims


def test_remainder_by_a_constant_int8_on_every_code_and_refused_in_int16():
    """remainder / fmod by a number: int8 one TABLE, equal to PT2E's simulation on all 256 input codes
    (q(f(dq(c)))); int16 has no form for a sawtooth (its jumps defeat the interpolating TABLE): the lowering
    says so, naming the op."""
    from tabula.errors import LoweringError

    calib, program, x, sims = _three_tables_on_every_code(Remainder)
    for got, sim in zip(program.run(x), sims):
        np.testing.assert_array_equal(got.reshape(sim.shape), sim)
    gm16 = tabula.quantize(Remainder().eval(), (calib[:1],), calib, scheme="a16w8")
    with pytest.raises(LoweringError, match="remainder: a sawtooth has an int8 form only, and its output is int16"):
        tabula.lower(gm16)



class Logit(nn.Module):
    def forward(self, p):
        return torch.logit(p), torch.logit(p, eps=0.1)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_logit_equals_pt2e_simulation(scheme):
    """logit (PyTorch's log(p / (1 - p)); eps clamps p to [eps, 1 - eps]): a TABLE on its input's calibrated grid
    clipped to [0, 1] (rules.DOMAIN; the poles saturate).  int8: equal to PT2E's simulation (q(f(dq(c))));
    a16w8 within 1 LSB (the int16 table plan); on (0.1, 0.9) within 0.05 of the float logit."""
    torch.manual_seed(1)
    p = torch.rand(24, 64) * 0.98 + 0.01
    gm = tabula.quantize(Logit().eval(), (p[:1],), p[:16], scheme=scheme)
    program = tabula.lower(gm)
    assert {o.attrs["function"] for o in program.graph.ops if o.op == "TABLE" and "function" in o.attrs} == {"aten.logit"}
    for t in p[16:]:
        with torch.no_grad():
            sims = [s.numpy() for s in gm(t[None])]
        outs = program.run(t[None].numpy())
        for got, sim, q in zip(outs, sims, program.output_qparams):
            assert np.abs(got - sim).max() / q.scale <= (1e-3 if scheme == "int8" else 1.0 + 1e-2)
        inner = (t > 0.1) & (t < 0.9)
        assert np.abs(outs[0].ravel() - torch.logit(t).numpy())[inner.numpy()].max() < 0.05
        assert np.abs(outs[1].ravel() - torch.logit(t, eps=0.1).numpy()).max() < 0.05


class FloorDivide(nn.Module):
    def forward(self, x):
        return (torch.floor_divide(x, 0.5), torch.div(x, 0.7, rounding_mode="floor"),
                torch.div(x, -0.6, rounding_mode="trunc"))


def test_floor_and_trunc_division_by_a_constant_int8_on_every_code_and_refused_in_int16():
    """floor_divide and div(rounding_mode="floor" / "trunc") by a number (PyTorch's floor(x / c), trunc(x / c)):
    int8 one TABLE, equal to PT2E's simulation on all 256 input codes, the real values whole numbers; int16 has no
    form for a staircase over an unbounded quotient: the lowering says so, naming the op and the mode."""
    from tabula.errors import LoweringError

    calib, program, x, sims = _three_tables_on_every_code(FloorDivide)
    for got, sim, qo, c, f in zip(program.run(x), sims, program.output_qparams, (0.5, 0.7, -0.6),
                                  (np.floor, np.floor, np.trunc)):
        np.testing.assert_array_equal(got.reshape(sim.shape), sim)
        exact = f(x.astype(np.float64) / c)  # the op on the dequantized codes, then its own rounding to the grid
        assert np.abs(got.ravel() - exact.ravel()).max() <= qo.scale / 2 + 1e-6
    gm16 = tabula.quantize(FloorDivide().eval(), (calib[:1],), calib, scheme="a16w8")
    with pytest.raises(LoweringError, match="floor_divide: a staircase has an int8 form only, and its output is int16") as ei:
        tabula.lower(gm16)
    # each message names the override (the op, and what feeds it when that is int16) that lowers it: following
    # them one by one (the model has three such ops) ends in a program whose divisions are int8 TABLEs
    precision, error = {}, ei.value
    for _ in range(4):
        hint = ast.literal_eval(re.search(r"in Python precision=(\{.*\})\)", str(error)).group(1))
        assert set(hint.values()) == {"int8"} and not set(hint) <= set(precision)
        precision |= hint
        try:
            fixed = tabula.lower(tabula.quantize(FloorDivide().eval(), (calib[:1],), calib, scheme="a16w8",
                                                 precision=precision))
            break
        except LoweringError as e:
            error = e
    assert {"floor_divide", "div"} <= set(precision)
    assert [o.op for o in fixed.graph.ops].count("TABLE") == 3

    class Trunc(nn.Module):
        def forward(self, x):
            return torch.div(x, 3.0, rounding_mode="trunc")

    gm16 = tabula.quantize(Trunc().eval(), (calib[:1],), calib, scheme="a16w8")
    with pytest.raises(LoweringError, match=r"div \(rounding_mode='trunc'\): a staircase has an int8 form only"):
        tabula.lower(gm16)
