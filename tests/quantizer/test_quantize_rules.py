"""Quantization rules per op class, read off the converted PT2E graph, in both schemes; numerics of
single-op models at domain edges."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula import rules
from tabula.quantizer.annotator import SCHEMES, domain_grid

QD = torch.ops.quantized_decomposed
SCHEME_NAMES = ["int8", "a16w8"]


class Unary(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _q_before(gm, op_name):
    """(scale, zp, qmin, qmax) of the quantize feeding ``op_name``'s input, and of its output."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and rules.canonical_op(n.target) == op_name:
            dq = n.args[0]
            q_in = dq.args[0]
            q_out = next(iter(n.users))
            return tuple(q_in.args[1:5]), tuple(q_out.args[1:5])
    raise AssertionError(f"{op_name} not found")


def _quantize(model, x, scheme):
    return tabula.quantize(model, (x[:1],), x, scheme=scheme)


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
@pytest.mark.parametrize("op", ["asin", "acos", "atanh"])
def test_domain_ops_get_the_fixed_grid_whatever_the_calibration(op, scheme):
    # calibration far outside the domain: must not matter
    x = torch.linspace(-3, 3, 64).reshape(1, 64).repeat(4, 1)
    gm = _quantize(Unary(getattr(torch, op)), x, scheme)
    (s_in, zp_in, qmin, qmax), _ = _q_before(gm, f"aten.{op}")
    s = SCHEMES[scheme]
    scale, zp = domain_grid(rules.DOMAIN[f"aten.{op}"], s)
    assert (s_in, zp_in, qmin, qmax) == (pytest.approx(scale, rel=1e-7), zp, -s.qmax, s.qmax)
    top = qmax * s_in
    if op == "atanh":
        assert top < 1.0 and np.float32(qmax) * np.float32(s_in) < 1.0  # strictly inside
    else:
        assert top == pytest.approx(1.0)


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
@pytest.mark.parametrize("inplace", [False, True])
def test_silu_has_its_own_output_grid_covering_its_range(scheme, inplace):
    x = torch.linspace(-10, 10, 201).reshape(1, 201).repeat(2, 1)
    model = nn.Sequential(nn.SiLU(inplace=inplace))
    gm = _quantize(model, x, scheme)
    (s_in, zp_in, in_min, in_max), (s_out, zp_out, qmin, qmax) = _q_before(gm, "aten.silu")
    assert (s_out, zp_out) != (s_in, zp_in)
    lo, hi = (qmin - zp_out) * s_out, (qmax - zp_out) * s_out
    top = (in_max - zp_in) * s_in
    assert top > 9.0
    # covers SiLU's image of the input grid: its minimum -0.2785 and f(top)
    # (the affine grid's integer zero point may leave the top value up to half an LSB outside)
    assert lo <= -0.2784 and hi >= top / (1 + math.exp(-top)) - 0.5 * s_out
    if scheme == "int8":
        assert s_out < s_in  # the output range [-0.28, 10] is narrower than the input's [-10, 10]


def test_silu_and_silu_inplace_are_classified_identically():
    x = torch.linspace(-6, 6, 50).reshape(1, 50).repeat(3, 1)
    a = _q_before(_quantize(nn.Sequential(nn.SiLU()), x, "int8"), "aten.silu")
    b = _q_before(_quantize(nn.Sequential(nn.SiLU(inplace=True)), x, "int8"), "aten.silu")
    assert a == b


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_cat_inputs_and_output_share_one_grid(scheme):
    class Net(nn.Module):
        def forward(self, x):
            return torch.cat([torch.tanh(x), torch.sigmoid(x), torch.exp(x)], dim=1)

    x = torch.randn(16, 8) * 2
    gm = _quantize(Net(), x, scheme)
    cat = next(n for n in gm.graph.nodes if rules.canonical_op(n.target) == "aten.cat")
    grids = {tuple(dq.args[1:3]) for dq in cat.args[0]}
    out = tuple(next(iter(cat.users)).args[1:3])
    assert grids == {out}
    # the shared grid covers every input (exp reaches e^max)
    s, zp = out
    qmax = SCHEMES[scheme].qmax
    assert (qmax - zp) * s >= float(torch.exp(x).max()) * 0.99


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_cat_of_a_value_that_also_feeds_another_op_keeps_its_own_grid(scheme):
    """t feeds exp *and* the cat: PT2E's implicit sharing used to pull the cat's grid into tanh's own
    (exp's values clipped to +-0.93: 7 dB; a16w8 failed to lower).  The cat's grid must cover every
    input and the program must stay close to float."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            t = torch.tanh(self.lin(x))
            return torch.cat([t, torch.exp(t), t * t], dim=1)

    torch.manual_seed(0)
    net, x = Net().eval(), torch.randn(64, 8)
    gm = _quantize(net, x, scheme)
    cat = next(n for n in gm.graph.nodes if rules.canonical_op(n.target) == "aten.cat")
    grids = {tuple(dq.args[1:3]) for dq in cat.args[0]}
    s, zp = tuple(next(iter(cat.users)).args[1:3])
    assert grids == {(s, zp)}
    with torch.no_grad():
        top = float(torch.exp(torch.tanh(net.lin(x))).max())
    assert (SCHEMES[scheme].qmax - zp) * s >= top * 0.99
    program = tabula.lower(gm, (x[:1],))
    with torch.no_grad():
        ref = net(x).numpy()
    got = np.concatenate([program.run(x[i : i + 1].numpy())[0] for i in range(16)])
    sqnr = 10 * math.log10(float((ref[:16] ** 2).sum()) / float(((got - ref[:16]) ** 2).sum()))
    assert sqnr > (30 if scheme == "int8" else 50), sqnr


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_range_preserving_ops_share_their_producers_grid(scheme):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)

        def forward(self, x):
            y = nn.functional.pad(self.conv(x), (1, 1, 1, 1))
            y = torch.relu(y)  # after a pad: shared (directly after the conv it would be fused)
            y = nn.functional.interpolate(y, scale_factor=2, mode="nearest")[:, :, 2:18, 2:18]
            y = nn.functional.max_pool2d(y, 2)
            y = nn.functional.avg_pool2d(y, 2).permute(0, 1, 3, 2)
            return torch.cat([torch.flatten(nn.functional.hardtanh(y), 1), y.mean(dim=[2, 3])], dim=1)

    x = torch.randn(8, 2, 8, 8)
    gm = _quantize(Net(), x, scheme)
    for op in ["aten.relu", "aten.pad", "aten.upsample_nearest2d", "aten.slice", "aten.max_pool2d", "aten.avg_pool2d",
               "aten.permute", "aten.hardtanh", "aten.flatten", "aten.mean"]:
        qin, qout = _q_before(gm, op)
        assert qin == qout, op


# ---- numerics of single-op programs ---------------------------------------------------------------
def _program(fn, x_calib, scheme):
    gm = _quantize(Unary(fn), x_calib, scheme)
    return tabula.lower(gm, (x_calib[:1],))


def _table_bound(program) -> float:
    """The compile-time error bound (max output LSB over every input code) of the program's table op,
    as tables.json reports it (any int16 form: one table, a plan of several, exact ramps)."""
    from tabula.report.tables import table_report

    (row,) = table_report(program.graph)
    if row["dtype"] == "int8":
        assert row["max_lsb"] <= 0.5 + 1e-4  # an exact int8 table only rounds (float32 f adds ~1e-6)
    return float(row["max_lsb"])


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
@pytest.mark.parametrize("op", ["asin", "acos", "atanh"])
def test_domain_edges_give_the_edge_values_not_zeros(op, scheme):
    x = torch.linspace(-1, 1, 101).reshape(1, 101)
    p = _program(getattr(torch, op), x, scheme)
    y = p.run(x.numpy())[0].reshape(-1)
    (s_in, zp_in, _), (s_out, zp_out, _) = p.input_qparams[0], p.output_qparams[0]
    xq = np.clip(np.rint(x.numpy().reshape(-1) / s_in), -SCHEMES[scheme].qmax, SCHEMES[scheme].qmax) * s_in
    f = getattr(np, {"asin": "arcsin", "acos": "arccos", "atanh": "arctanh"}[op])
    expect = f(np.clip(xq, -1 + 1e-12 if op == "atanh" else -1, 1 - 1e-12 if op == "atanh" else 1))
    # half an output LSB plus the table's own error bound (int16: the tiled plan, under 1 LSB even at
    # the infinite slope at +-1; int8: the bound is the rounding, <= 0.5)
    tol = (0.5 + _table_bound(p)) * s_out + 1e-6
    assert np.abs(y - expect).max() <= tol
    if op == "asin":
        assert y[0] == pytest.approx(-math.pi / 2, abs=tol) and y[-1] == pytest.approx(math.pi / 2, abs=tol)
    if op == "acos":
        assert y[0] == pytest.approx(math.pi, abs=tol) and y[-1] == pytest.approx(0.0, abs=tol)
        assert y[0] == y.max()  # acos(-1) is the largest value, not 0
    if op == "atanh":
        assert y[0] < -2.5 and y[-1] > 2.5  # near-pole codes saturate high, not to zero


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_silu_error_within_half_an_output_lsb(scheme):
    x = torch.linspace(-10, 10, 2001).reshape(1, 2001)
    p = _program(torch.nn.functional.silu, x, scheme)
    (s_in, zp_in, _), (s_out, _, _) = p.input_qparams[0], p.output_qparams[0]
    y = p.run(x.numpy())[0].reshape(-1)
    # the input codes as the program quantizes them (float32: a calibrated end at a half code, as
    # min/max grids give, rounds as the program does it)
    xq = (p.quantize_inputs(x.numpy())[0].reshape(-1).astype(np.float64) - zp_in) * s_in
    expect = xq / (1 + np.exp(-xq))
    tol = (0.5 + _table_bound(p)) * s_out + 1e-6
    assert np.abs(y - expect).max() <= tol


@pytest.mark.parametrize("op", ["log", "rsqrt", "sqrt", "reciprocal"])
def test_pole_ops_clip_the_calibrated_grid_to_the_domain(op):
    x = torch.linspace(-2, 4, 300).reshape(1, 300)  # calibration crosses the domain edge at 0
    gm = _quantize(Unary(getattr(torch, op)), x, "int8")
    (s_in, zp_in, qmin, _), _ = _q_before(gm, f"aten.{op}")
    assert (qmin - zp_in) * s_in == pytest.approx(0.0, abs=1e-9)  # lowest code is exactly 0
    p = tabula.lower(gm, (x[:1],))
    y = p.run(np.linspace(0, 4, 300, dtype=np.float32).reshape(1, 300))[0].reshape(-1)
    assert np.isfinite(y).all()
    assert np.all(np.diff(y) >= 0) if op == "sqrt" else np.all(np.diff(y) <= 0) if op in ("rsqrt", "reciprocal") else np.all(np.diff(y) >= 0)


def _input_grid(gm):
    """(scale, zero point) of the first quantize node (the model input's grid)."""
    q = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target == QD.quantize_per_tensor.default)
    return float(q.args[1]), int(q.args[2])


def _heavy_tailed(n):
    """``n`` ReLU-like inputs of 512 values at 8 different loudnesses (a histogram grid clips the tails)."""
    g = torch.Generator().manual_seed(0)
    return torch.relu(torch.randn(n, 512, generator=g)) * (torch.arange(n) % 8 + 1).float().reshape(n, 1)


@pytest.mark.parametrize("n", [8, 99])
def test_few_calibration_inputs_give_min_max_grids(n):
    """observer="auto" (default): fewer than MIN_MAX_BELOW inputs -> the grid spans the observed
    min/max (no calibrated value clipped); "histogram" clips the tails; "minmax" is the same as auto."""
    x = _heavy_tailed(n)
    lo, hi = float(x.min()), float(x.max())
    model = Unary(torch.tanh)
    s, zp = _input_grid(tabula.quantize(model, (x[:1],), x))
    assert (-128 - zp) * s <= lo and (127 - zp) * s >= hi - s / 2
    assert s == pytest.approx((hi - lo) / 255, rel=1e-6)
    assert _input_grid(tabula.quantize(model, (x[:1],), x, observer="minmax")) == (s, zp)
    s_h, _ = _input_grid(tabula.quantize(model, (x[:1],), x, observer="histogram"))
    assert s_h < s


def test_min_max_grids_build_no_histogram(monkeypatch):
    """A calibration whose size is known and below MIN_MAX_BELOW gets min/max grids without any histogram
    being built (HistogramObserver.forward never runs); the grids are the ones of the same inputs given
    as an iterator (size unknown before calibrating: histogram built, min/max used) -- every grid equal."""
    from tabula.quantizer import annotator

    calls = []
    forward = annotator.HistogramObserver.forward
    monkeypatch.setattr(annotator.HistogramObserver, "forward", lambda self, x: calls.append(1) or forward(self, x))
    x = _heavy_tailed(12)
    model = Unary(torch.tanh)
    known = tabula.quantize(model, (x[:1],), x)
    assert calls == []
    unknown = tabula.quantize(model, (x[:1],), iter([(x[i : i + 1],) for i in range(len(x))]))
    assert len(calls) >= len(x)
    grids = lambda gm: [(n.target, tuple(float(a) if isinstance(a, float) else a for a in n.args[1:3]))  # noqa: E731
                        for n in gm.graph.nodes if n.op == "call_function" and "quantize_per_tensor" in str(n.target)]
    assert grids(known) == grids(unknown) and grids(known)


def test_many_calibration_inputs_give_histogram_grids():
    from tabula.quantizer.annotator import MIN_MAX_BELOW

    x = _heavy_tailed(MIN_MAX_BELOW)
    model = Unary(torch.tanh)
    auto = _input_grid(tabula.quantize(model, (x[:1],), x))
    assert auto == _input_grid(tabula.quantize(model, (x[:1],), x, observer="histogram"))
    assert auto[0] < 0.95 * _input_grid(tabula.quantize(model, (x[:1],), x, observer="minmax"))[0]


def test_unknown_observer_is_rejected():
    x = torch.randn(2, 8)
    with pytest.raises(ValueError, match="observer"):
        tabula.quantize(Unary(torch.tanh), (x[:1],), x, observer="percentile")
