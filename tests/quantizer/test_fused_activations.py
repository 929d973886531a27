"""A conv / conv1d / linear / add / sub / mul / matmul followed by its only user relu, relu6, hardtanh or clamp takes the
activation's output grid (TFLite and ExecuTorch do the same) and the activation runs in the producer's
epilogue: its RESCALE saturates to the grid (int8 ReLU: zero point -128, no CLAMP) or a CLAMP follows it.
Int8 SQNR vs float rises; the program still equals PT2E's simulation; a16w8 stays correct."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torchao.quantization.pt2e import move_exported_model_to_eval
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import tabula
from tabula import rules
from tabula.fx import is_dequantize, is_quantize
from tabula.quantizer import capture
from tabula.quantizer.annotator import TabulaQuantizer
from tabula.report import sqnr_db


class ConvNet(nn.Module):
    """conv-relu-conv-relu6-linear: the network of the SQNR benchmark (benchmarks/sqnr_fused_activations.py)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = nn.functional.relu6(self.c2(y))
        return self.fc(y.flatten(1))


def _net_and_data():
    torch.manual_seed(0)
    return ConvNet().eval(), torch.randn(48, 3, 8, 8)


def _quantize(model, x, scheme, fuse=True):
    gm = capture(model, (x[:1],))
    prepared = prepare_pt2e(gm, TabulaQuantizer(scheme, fuse_activations=fuse))
    move_exported_model_to_eval(prepared)
    with torch.no_grad():
        for i in range(x.shape[0]):
            prepared(x[i : i + 1])
    out = convert_pt2e(prepared)
    move_exported_model_to_eval(out)
    return out


def _node(gm, name):
    return next(n for n in gm.graph.nodes if n.op == "call_function" and rules.canonical_op(n.target) == name)


def _sim_and_program(model, gm, x):
    program = tabula.lower(gm)
    with torch.no_grad():
        ref = model(x).numpy()
        sim = np.concatenate([gm(x[i : i + 1]).numpy() for i in range(x.shape[0])])
    return ref, sim, program.run(x.numpy())[0], program


def test_relu_after_conv_gets_the_relu_grid_and_no_clamp_int8():
    model, x = _net_and_data()
    gm = tabula.quantize(model, (x[:1],), x)
    relu = _node(gm, "aten.relu")
    assert rules.canonical_op(relu.args[0].target) == "aten.conv2d"  # no quantize between them: one grid
    q = next(iter(relu.users))
    assert is_quantize(q) and q.args[2] == -128  # the grid starts at the ReLU's 0: every code is used
    ref, sim, got, program = _sim_and_program(model, gm, x)
    ops = [o.op for o in program.graph.ops]
    assert "CLAMP" not in ops and ops.count("RESCALE") == 3  # the RESCALE's saturation is the ReLU
    scale = program.output_qparams[0].scale
    assert np.abs(sim - got).max() / scale <= 1.0 + 1e-4
    # ReLU (and ReLU6) on the conv's full grid spent half the codes below 0: SQNR rises
    unfused = _sim_and_program(model, _quantize(model, x, "int8", fuse=False), x)[2]
    assert sqnr_db(ref, got) > sqnr_db(ref, unfused) + 1.5, (sqnr_db(ref, got), sqnr_db(ref, unfused))


class _ConvIdentityReLU(nn.Module):
    """conv -> clone -> dropout -> relu: identities removed before quantization hide no fusion."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return torch.relu(self.drop(self.conv(x).clone()))


@pytest.mark.parametrize("direct", [False, True], ids=["tabula_quantize", "prepare_pt2e"])
def test_an_identity_between_conv_and_relu_does_not_stop_the_fusion(direct):
    torch.manual_seed(0)
    model, x = _ConvIdentityReLU().eval(), torch.randn(16, 3, 8, 8)
    gm = _quantize(model, x, "int8") if direct else tabula.quantize(model, (x[:1],), x)
    relu = _node(gm, "aten.relu")
    assert rules.canonical_op(relu.args[0].target) == "aten.conv2d"  # fused: no quantize, no clone between
    ops = [o.op for o in tabula.lower(gm).graph.ops]
    assert "CLAMP" not in ops and ops.count("RESCALE") == 1


def test_a16w8_fused_relu_is_a_clamp_after_the_rescale_and_matches_pt2e():
    model, x = _net_and_data()
    gm = tabula.quantize(model, (x[:1],), x, scheme="a16w8")
    ref, sim, got, program = _sim_and_program(model, gm, x)
    g = program.graph
    clamps = [o for o in g.ops if o.op == "CLAMP"]
    assert [(o.attrs["min"], o.attrs["max"]) for o in clamps] == [(0, 32767), (0, 32767)]  # symmetric int16: 0 is code 0
    for c in clamps:  # each CLAMP reads its producer's RESCALE, on the same grid
        producer = next(o for o in g.ops if o.outputs == c.inputs)
        assert producer.op == "RESCALE"
        t_in, t_out = g.tensors[c.inputs[0]], g.tensors[c.outputs[0]]
        assert (t_in.scale, t_in.zero_point) == (t_out.scale, t_out.zero_point)
    # int16 grids are fine: the 16-bit multipliers of the int48 RESCALEs (TOSA) and RESCALE's rounding
    # tie differ from PT2E's float path by an LSB per layer
    scale = program.output_qparams[0].scale
    assert np.rint(np.abs(sim - got) / scale).max() <= 3  # in codes (float32 values: 3 LSB can read 3.0007)
    assert abs(sqnr_db(ref, got) - sqnr_db(ref, sim)) < 0.05 and sqnr_db(ref, got) > 35


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_clamp_inside_the_range_and_add_relu_are_exact(scheme):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 8)
            self.fc2 = nn.Linear(8, 8)

        def forward(self, x):
            # a grid always holds 0, so a range that excludes it leaves a bound inside the grid: a CLAMP
            a = torch.clamp(self.fc1(x), 0.5, 3.0)
            b = nn.functional.hardtanh(self.fc2(x), -2.0, -0.25)
            return torch.relu(a + b)

    torch.manual_seed(1)
    model, x = Net().eval(), torch.randn(64, 8) * 2
    gm = tabula.quantize(model, (x[:1],), x, scheme=scheme)
    for name in ("aten.clamp", "aten.hardtanh", "aten.relu"):
        assert not rules.canonical_op(_node(gm, name).args[0].target).startswith("quantized_decomposed")
    ref, sim, got, program = _sim_and_program(model, gm, x)
    scale = program.output_qparams[0].scale
    diffs = np.abs(sim - got) / scale
    assert diffs.max() <= (1.0 + 1e-4 if scheme == "int8" else 3.0) and (diffs < 1e-3).mean() > 0.9
    assert got.min() >= 0 and sqnr_db(ref, got) > (30 if scheme == "int8" else 40)
    g = program.graph
    bounds = {o.source.rsplit(" ", 1)[-1]: (o.attrs["min"], o.attrs["max"], g.tensors[o.outputs[0]]) for o in g.ops
              if o.op == "CLAMP"}
    lo, hi = (-128, 127) if scheme == "int8" else (-32768, 32767)
    cmin, _, t = bounds["clamp"]
    assert cmin > lo and abs((cmin - t.zero_point) * t.scale - 0.5) <= t.scale / 2  # 0.5 on the clamp's grid
    _, cmax, t = bounds["hardtanh"]
    assert cmax < hi and abs((cmax - t.zero_point) * t.scale + 0.25) <= t.scale / 2


def test_an_activation_whose_producer_has_other_users_keeps_the_shared_rule():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            y = self.fc(x)
            return torch.relu(y), torch.tanh(y)

    torch.manual_seed(2)
    model, x = Net().eval(), torch.randn(32, 8)
    gm = tabula.quantize(model, (x[:1],), x)
    relu = _node(gm, "aten.relu")
    dq = relu.args[0]
    assert is_dequantize(dq)
    q_in, q_out = dq.args[0], next(iter(relu.users))
    assert tuple(q_in.args[1:3]) == tuple(q_out.args[1:3])  # shares the linear's grid
    program = tabula.lower(gm)
    assert [o.op for o in program.graph.ops].count("CLAMP") == 1
    got = program.run(x.numpy())
    with torch.no_grad():
        sim = [np.concatenate([gm(x[i : i + 1])[k].numpy() for i in range(32)]) for k in range(2)]
    for s, g, qp in zip(sim, got, program.output_qparams):
        assert np.abs(s - g).max() / qp.scale <= 1.0 + 1e-4


def test_fusion_can_be_turned_off():
    model, x = _net_and_data()
    gm = _quantize(model, x[:8], "int8", fuse=False)
    relu = _node(gm, "aten.relu")
    assert is_dequantize(relu.args[0])
    assert [o.op for o in tabula.lower(gm).graph.ops].count("CLAMP") == 2


@pytest.mark.parametrize("producer", ["conv1d", "sub", "mul"])
def test_relu_after_conv1d_sub_and_mul_is_fused(producer):
    """conv1d, sub and mul take the ReLU's grid as conv2d does (rules.FUSING_PRODUCERS): no quantize between
    them, no CLAMP (int8 ReLU: zero point -128), no code below 0; the program equals PT2E's simulation."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.d = nn.Conv1d(4, 6, 3, padding=1), nn.Conv1d(4, 6, 3, padding=1)

        def forward(self, x):
            a, b = self.c(x), self.d(x)
            y = a if producer == "conv1d" else (a - b if producer == "sub" else a * b)
            return torch.relu(y)

    torch.manual_seed(2)
    model, x = Net().eval(), torch.randn(48, 4, 10)
    gm = tabula.quantize(model, (x[:1],), x)
    assert not rules.canonical_op(_node(gm, "aten.relu").args[0].target).startswith("quantized_decomposed")
    ref, sim, got, program = _sim_and_program(model, gm, x)
    scale = program.output_qparams[0].scale
    diffs = np.abs(sim - got) / scale  # sub as add: the int32 sum of the two rescaled inputs, 2 LSB at most
    assert diffs.max() <= (1.0 if producer != "sub" else 2.0) + 1e-4 and (diffs > 0.5).mean() < 0.01
    assert got.min() >= 0 and sqnr_db(ref, got) > 30 and abs(sqnr_db(ref, got) - sqnr_db(ref, sim)) < 0.05
    assert "CLAMP" not in [o.op for o in program.graph.ops]
    assert program.output_qparams[0].zero_point == -128
