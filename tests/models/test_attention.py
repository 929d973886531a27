"""linear on 3-D inputs [B, T, C] (FULLY_CONNECTED over [B*T, C]) and matmul / bmm / mm of two
activations (MATMUL): the lowered program equals PT2E's simulation, and a tiny attention block runs
bit-exact on the host build in both schemes."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from fixtures.attention_model import TinyAttention, export_attention
from helpers import scons
from tabula.errors import UnsupportedOpError
from tabula.report import sqnr_db


def _check(model, x, scheme, calib=None, max_lsb=1.0, sqnr_tol=0.1, min_exact=0.9):
    """Quantize, lower, run; the program's outputs equal PT2E's simulation within ``max_lsb`` (most of
    them exactly) and have its SQNR vs float.  Returns (program, SQNR).

    (An LSB of difference in q or k -- a RESCALE tie, the bias PT2E keeps in float -- moves a product
    by up to a few output LSB: chained integer ops differ from the float simulation that way.)"""
    gm = tabula.quantize(model, (x[:1] if calib is None else x,), x if calib is None else calib, scheme=scheme)
    program = tabula.lower(gm)
    with torch.no_grad():
        ref = model(x).numpy()
        sim = gm(x).numpy() if calib is not None else np.concatenate([gm(x[i : i + 1]).numpy() for i in range(len(x))])
    got = program.run(x.numpy())[0]
    diff = np.abs(got - sim) / program.output_qparams[0].scale
    assert diff.max() <= max_lsb and (diff < 1e-3).mean() >= (min_exact if scheme == "int8" else 0.0)
    assert abs(sqnr_db(ref, got) - sqnr_db(ref, sim)) < sqnr_tol
    return program, sqnr_db(ref, got)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_linear_on_a_3d_input_is_fully_connected_over_the_rows(scheme):
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(8, 5), nn.Tanh(), nn.Linear(5, 3)).eval(), torch.randn(16, 7, 8)
    program, sqnr = _check(model, x, scheme, max_lsb=1.0 + 1e-4 if scheme == "int8" else 3.0)
    g = program.graph
    fcs = [o for o in g.ops if o.op == "FULLY_CONNECTED"]
    assert [g.tensors[o.inputs[0]].shape for o in fcs] == [(7, 8), (7, 5)]
    assert g.tensors[g.outputs[0]].shape == (1, 7, 3) and sqnr > (30 if scheme == "int8" else 45)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_attention_scores_are_a_matmul_of_two_activations(scheme):
    torch.manual_seed(0)
    model, x = TinyAttention().eval(), torch.randn(32, 6, 8)
    # q @ k^T multiplies two quantized activations: their 1-LSB ties move the SQNR by up to 0.10 dB
    # (int8, min/max grids of the 32 calibration inputs; every output within 1 LSB of PT2E's)
    program, sqnr = _check(model, x, scheme, max_lsb=1.0 + 1e-4 if scheme == "int8" else 3.0,
                           sqnr_tol=0.15)
    g = program.graph
    (mm,) = [o for o in g.ops if o.op == "MATMUL"]
    a, b = (g.tensors[n] for n in mm.inputs)
    assert a.shape == (1, 6, 8) and b.shape == (1, 8, 6) and a.dtype == b.dtype == ("int8" if scheme == "int8" else "int16")
    assert mm.attrs == {"a_zp": a.zero_point, "b_zp": b.zero_point}
    assert g.tensors[mm.outputs[0]].dtype == ("int32" if scheme == "int8" else "int48")
    assert sqnr > (30 if scheme == "int8" else 45)


class Mm2d(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.q, self.k, self.op = nn.Linear(8, 8), nn.Linear(8, 8), op

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        if self.op == "mm":
            return torch.relu(torch.mm(q, k.t()))  # relu fused into the matmul's epilogue
        if self.op == "bmm":
            return torch.bmm(q.unsqueeze(0) if q.dim() == 2 else q, k.transpose(1, 2))
        return q @ k.t()


@pytest.mark.parametrize("op", ["matmul", "mm"])
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_2d_matmul(op, scheme):
    torch.manual_seed(3)
    model, x = Mm2d(op).eval(), torch.randn(5, 8)
    # 25 outputs: one output a few LSB off moves the SQNR by up to a dB
    program, _ = _check(model, x, scheme, calib=[(x,), (x * 0.5,)], max_lsb=2.0 + 1e-4 if scheme == "int8" else 4.0,
                        sqnr_tol=1.0, min_exact=0.8)
    g = program.graph
    assert [o.op for o in g.ops].count("MATMUL") == 1 and g.tensors[g.outputs[0]].shape == (5, 5)
    if op == "mm":
        assert program.run(x.numpy())[0].min() >= 0


def test_bmm_with_a_batch():
    torch.manual_seed(4)
    model, x = Mm2d("bmm").eval(), torch.randn(3, 4, 8)
    program, _ = _check(model, x, "int8", calib=[(x,)], max_lsb=2.0 + 1e-4, sqnr_tol=1.0, min_exact=0.8)
    (mm,) = [o for o in program.graph.ops if o.op == "MATMUL"]
    assert program.graph.tensors[mm.outputs[0]].shape == (3, 4, 4)


def test_broadcast_matmul_and_4d_linear_are_listed_up_front():
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return self.fc(x) @ x.transpose(-2, -1)[:, :1]  # 4-D heads are fine; batch 2 vs 1 broadcasts

    x = torch.randn(1, 2, 4, 8)
    with pytest.raises(UnsupportedOpError, match=r"(?s)aten.linear on a 4-D input.*"
                                                 r"aten.matmul of shapes \(1, 2, 4, 8\) and \(1, 1, 8, 4\)"):
        tabula.quantize(Heads(), (x,), x)


@pytest.fixture(scope="module")
def attention(tmp_path_factory):
    d = tmp_path_factory.mktemp("attention")
    export_attention(d)
    return d


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_attention_block_bit_exact_on_host(attention, tmp_path, scheme):
    scons("board=host", f"scheme={scheme}", f"build_dir={tmp_path}", f"model={attention / 'attention.pt2'}",
          f"calib={attention / 'calib.npz'}", f"data={attention / 'test.npz'}")
    name = "attention" if scheme == "int8" else f"attention-{scheme}"
    r = json.loads((tmp_path / "host" / name / "results.json").read_text())
    assert r["n_outputs_received"] == 16 and r["bit_exact_mismatches"] == 0 and r["output_elements"] == 16 * 6 * 4
    assert r["sqnr_db_vs_float"] > (30 if scheme == "int8" else 45)
    ops = [o["op"] for o in json.loads((tmp_path / "host" / name / "ir.json").read_text())["ops"]]
    assert "MATMUL" in ops and ops.count("FULLY_CONNECTED") == 3
