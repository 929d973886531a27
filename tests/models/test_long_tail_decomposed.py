"""Issue 25's long tail decomposed before quantization (tabula.quantizer.decompose_ops_pass): clamp with tensor bounds,
constant_pad_nd, copy_, einsum, cosine_similarity, max_pool2d_with_indices, pow of two tensors (nn.RNN's unrolling:
tests/quantizer/test_recurrent.py).

The rewritten float graph computes what PyTorch does (every variant the rewrites take); what they cannot take is
listed before calibration; the data movement ones (clamp, pad, copy, max_pool) equal PT2E's simulation code for code;
one host build per scheme runs a model holding every one bit-exact against the Python reference (cosine_similarity's
and pow's error against float: benchmarks/op_coverage.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tabula
from helpers import scons
from tabula import rules
from tabula.errors import UnsupportedOpError
from tabula.quantizer import capture, passes
from tabula.quantizer.annotator import check_supported


def _rewritten(model, x):
    gm = capture(model.eval(), (x,))
    for _, run_pass in passes():
        run_pass(gm)
    return gm


def _names(gm) -> set[str]:
    return {rules.canonical_op(n.target) for n in gm.graph.nodes if n.op == "call_function"}


class ClampT(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("lo", torch.linspace(-1.5, -0.5, 16))

    def forward(self, x):  # [1, 8, 16]
        a, b = x[:, :4], x[:, 4:]
        return (torch.clamp(x, torch.tensor(-1.0), torch.tensor(1.5)),  # one-element constants: the numbers
                torch.clamp(x, self.lo),  # a constant vector: MAXIMUM with it
                torch.clamp(a, b - 1.0, b + 1.0),  # activations: MAXIMUM, MINIMUM
                torch.clamp(a, torch.tensor(-0.5), b),  # a number and an activation
                torch.clamp(a, b, torch.tensor(0.25)),  # an activation, then a number
                torch.clamp(x[0, 0], torch.full((2, 16), -1.0)))  # a one-valued bound of more dims broadcasts x


class Moves(nn.Module):
    def forward(self, x):  # [1, 8, 16]
        img = x.view(1, 2, 8, 8)
        return (torch.constant_pad_nd(x, (1, 2)), torch.constant_pad_nd(img, (1, 0, 2, 1), 0.5),
                torch.zeros_like(x).copy_(x), torch.zeros(2, 8, 16).copy_(x[0]),
                F.max_pool2d(img, 2, return_indices=True)[0], F.max_pool2d(img, 3, 2, 1, return_indices=True)[0])


class Einsum(nn.Module):
    def forward(self, x):  # [1, 8, 16]
        a, b, m = x[:, :4], x[:, 4:], x[0]
        return (torch.einsum("bij,bkj->bik", a, b), torch.einsum("bij,bjk->bik", a[:, :, :4], b),
                torch.einsum("ij,jk->ik", m[:, :4], m[:4]), torch.einsum("bi,bj->bij", m[:2], m[2:4]),
                torch.einsum("bhqd,bhkd->bhqk", a.view(1, 2, 2, 16), b.view(1, 2, 2, 16)),
                torch.einsum("ij,ij->i", m[:4], m[4:]), torch.einsum("ij->ji", m), torch.einsum("ij->j", m),
                torch.einsum("ijk,k->ij", a, m[0]), torch.einsum("ij,kj", m[:4], m[4:]))


class Cos(nn.Module):
    def forward(self, x):  # [1, 8, 16]
        return F.cosine_similarity(x[:, :4], x[:, 4:], dim=-1)


class CosBroadcast(nn.Module):
    def forward(self, x):
        return F.cosine_similarity(x, x[:, :1], dim=1), F.cosine_similarity(x[0], x[0, 0], dim=-1, eps=1e-3)


class Pow(nn.Module):
    def forward(self, x):  # [1, 8, 16], values in [0.5, 2]
        return torch.pow(x[:, :4], x[:, 4:])


class PowConst(nn.Module):
    def forward(self, x):
        return torch.pow(x, torch.tensor(1.5)), torch.pow(x[:, :4], x[:, 4:] - 1.0)


@pytest.mark.parametrize("model,lo,hi,gone", [
    (ClampT(), -3.0, 3.0, set()), (Moves(), -3.0, 3.0, {"aten.constant_pad_nd", "aten.copy", "aten.max_pool2d_with_indices"}),
    (Einsum(), -3.0, 3.0, {"aten.einsum"}), (Cos(), -3.0, 3.0, {"aten.cosine_similarity"}),
    (CosBroadcast(), -3.0, 3.0, {"aten.cosine_similarity"}), (Pow(), 0.5, 2.0, set()), (PowConst(), 0.5, 2.0, set()),
], ids=["clamp", "moves", "einsum", "cos", "cos-broadcast", "pow", "pow-const"])
def test_rewritten_graph_computes_what_pytorch_does(model, lo, hi, gone):
    torch.manual_seed(0)
    x = lo + (hi - lo) * torch.rand(1, 8, 16)
    gm = _rewritten(model, x)
    names = _names(gm)
    assert not names & gone, names
    assert names <= set(rules.supported_ops()) | {"_operator.getitem"}, names
    for n in gm.graph.nodes:  # no clamp with a tensor bound, no pow with a tensor exponent is left
        if n.op == "call_function" and rules.canonical_op(n.target) == "aten.clamp":
            assert not any(isinstance(a, torch.fx.Node) for a in n.args[1:])
        assert n.target != torch.ops.aten.pow.Tensor_Tensor
    for scheme in ("int8", "a16w8"):
        check_supported(gm, scheme)
    with torch.no_grad():
        want, got = model(x), gm(x)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=2e-6)


def test_rewritten_ops_make_the_ops_expected():
    """einsum "bij,bkj->bik" is the bmm of a transposed operand (no reshape: already 3-D); cosine_similarity two
    rsqrt TABLEs; pow of a one-element constant exponent the pow TABLE, of a tensor the log and exp TABLEs."""
    x = torch.rand(1, 8, 16) + 0.5
    ein = [rules.canonical_op(n.target) for n in _rewritten(Fn(lambda t: torch.einsum("bij,bkj->bik", t[:, :4], t[:, 4:])),
                                                            x).graph.nodes if n.op == "call_function"]
    assert ein == ["aten.slice", "aten.slice", "aten.permute", "aten.bmm"]
    cos = [rules.canonical_op(n.target) for n in _rewritten(Cos(), x).graph.nodes if n.op == "call_function"]
    assert cos.count("aten.rsqrt") == 2 and cos.count("aten.sum") == 3
    pw = [(rules.canonical_op(n.target), n.args[1:]) for n in _rewritten(PowConst(), x).graph.nodes
          if n.op == "call_function" and rules.canonical_op(n.target) in ("aten.pow", "aten.log", "aten.exp")]
    assert pw == [("aten.pow", (1.5,)), ("aten.log", ()), ("aten.exp", ())]


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("fn,why", [
    (lambda x: torch.einsum("...j,...j->...", x, x), r"aten.einsum '...j,...j->...' with '...'"),
    (lambda x: torch.einsum("ij,jk,kl->il", x[0, :, :8], x[0, :8, :8], x[0, :8, :8]), "aten.einsum .* of 3 operands"),
    (lambda x: torch.einsum("ii->i", x[0, :, :8]), "aten.einsum 'ii->i' with an index repeated"),
    (lambda x: (lambda v, i: v + i.float())(*F.max_pool2d(x.view(1, 2, 8, 8), 2, return_indices=True)),
     "aten.max_pool2d_with_indices whose indices are read"),
    (lambda x: torch.zeros(1, 8, 16, dtype=torch.int32).copy_(x).float(), "aten.copy from torch.float32 into torch.int32"),
], ids=["ellipsis", "three", "diagonal", "indices", "int-copy"])
def test_what_the_rewrites_cannot_take_is_listed_before_calibration(fn, why):
    x = torch.randn(4, 8, 16)
    with pytest.raises(UnsupportedOpError, match=why):
        tabula.quantize(Fn(fn), (x[:1],), x)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_data_movement_equals_pt2e_simulation_code_for_code(scheme):
    """clamp (numbers: CLAMP; tensors: MAXIMUM / MINIMUM on one grid), pad, copy and max_pool2d move or compare codes
    on one grid: the program equals PT2E's simulation exactly."""
    torch.manual_seed(2)
    x = torch.randn(24, 8, 16) * 1.5
    for model in (ClampT().eval(), Moves().eval()):
        gm = tabula.quantize(model, (x[:1],), x[:16], scheme=scheme)
        program = tabula.lower(gm)
        ops = {o.op for o in program.graph.ops}
        assert ops <= {"SLICE", "RESHAPE", "CLAMP", "MAXIMUM", "MINIMUM", "RESCALE", "ADD", "SUB", "TABLE", "PAD",
                       "TILE", "MAX_POOL2D", "TRANSPOSE"}, ops
        for t in x[16:]:
            with torch.no_grad():
                sims = [s.numpy() for s in gm(t[None])]
            outs = program.run(t[None].numpy())
            for k, (got, sim) in enumerate(zip(outs, sims)):
                if isinstance(model, ClampT) and k >= 2:  # b - 1, b + 1: an ADD each, its RESCALE rounds ties half up
                    assert np.abs(got.reshape(sim.shape) - sim).max() <= program.output_qparams[k].scale * 1.001
                else:
                    np.testing.assert_array_equal(got.reshape(sim.shape), sim)


class Every(nn.Module):
    """Every rewrite of this file and nn.RNN (tanh and relu) in one model, for the host builds."""

    def __init__(self):
        super().__init__()
        self.clamp, self.moves, self.ein = ClampT(), Moves(), Einsum()
        self.rnn_t = nn.RNN(16, 8, batch_first=True)
        self.rnn_r = nn.RNN(16, 8, nonlinearity="relu", batch_first=True)

    def forward(self, x):  # [1, 8, 16]
        p = x.abs() + 0.5
        return (*self.clamp(x), *self.moves(x), *self.ein(x)[:5], Cos()(x), torch.pow(p[:, :4], p[:, 4:] * 0.5),
                self.rnn_t(x)[0], self.rnn_r(x)[0])


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_every_rewrite_bit_exact_on_host(tmp_path, scheme):
    torch.manual_seed(3)
    model, x = Every().eval(), torch.randn(24, 8, 16)
    torch.export.save(torch.export.export(model, (x[:1],)), tmp_path / "m.pt2")
    np.savez(tmp_path / "calib.npz", x=x[:16].numpy())
    np.savez(tmp_path / "test.npz", x=x[16:20].numpy())
    name = "every"
    scons("board=host", f"scheme={scheme}", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'm.pt2'}",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}", f"name={name}")
    out = tmp_path / "b" / "host" / (name if scheme == "int8" else f"{name}-{scheme}")
    r = json.loads((out / "results.json").read_text())
    assert r["n_outputs_received"] == 4 and len(r["outputs"]) == 21 and r["bit_exact_mismatches"] == 0
    ops = {o["op"] for o in json.loads((out / "ir.json").read_text())["ops"]}
    assert {"MAXIMUM", "MINIMUM", "PAD", "MAX_POOL2D", "MATMUL", "TABLE", "FULLY_CONNECTED"} <= ops
