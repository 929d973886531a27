"""Issue 25's aten ops at model level, on the IR ops GREATER / GREATER_EQUAL / EQUAL, SELECT, MAXIMUM /
MINIMUM, REVERSE, REDUCE_MAX / REDUCE_MIN, REDUCE_SUM and ARGMAX: comparisons of two activations and
against numbers with ``where`` (a number operand too), ``maximum`` / ``minimum``, ``abs`` (TABLE), ``flip``,
``amax`` / ``amin`` / ``sum`` / ``mean`` over a dim of a 3-D tensor, ``mish`` (TABLE; its int16 error and the
other new table ops', abs / log2 / log10, are pinned in tests/qmath/test_table_builders.py), ``argmax`` as a classifier's last op.
Each lowered program equals PT2E's simulation of the same quantized graph (masks and indices exactly; the
values within 1 LSB int8 -- a RESCALE rounds ties half up where PyTorch rounds them to even -- and a few
LSB a16w8); one host build runs a model holding every family bit-exact against the Python reference
(int8; the kernels have their C == Python tests in tests/ops/)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tabula
from helpers import scons
from tabula.errors import UnsupportedOpError


class Compare(nn.Module):
    """Every comparison of the input with a number (0.0 is a code: eq hits it), and where with a number."""

    def forward(self, x):
        return (x > 0.3, x >= 0.0, x < -0.3, x <= 0.0, x == 0.0, x != 0.0, torch.where(x > 0.3, x, 0.25))


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_comparisons_with_numbers_are_exact_on_every_input_code(scheme):
    """The threshold codes reproduce PyTorch's float32 comparison of every dequantized code: each mask
    equals PT2E's simulation on all 256 (int8) / 65536 (int16) codes; where copies the codes exactly."""
    torch.manual_seed(0)
    n = 4096
    calib = torch.randn(8, 1, n)
    gm = tabula.quantize(Compare().eval(), (calib[:1],), calib, scheme=scheme)
    program = tabula.lower(gm)
    q = program.input_qparams[0]
    lo, hi = (-128, 127) if scheme == "int8" else (-32768, 32767)
    codes = np.arange(lo, hi + 1)
    for chunk in np.array_split(codes, max(1, len(codes) // n)):
        x = np.resize(((chunk - q.zero_point) * np.float32(q.scale)).astype(np.float32), (1, 1, n))
        with torch.no_grad():
            sims = [t.numpy() for t in gm(torch.from_numpy(x))]
        gots = program.run(x)
        for got, sim in zip(gots[:6], sims[:6]):
            np.testing.assert_array_equal(got.reshape(sim.shape), sim.astype(np.float32))
        np.testing.assert_array_equal(gots[6].reshape(sims[6].shape), sims[6])
    ops = [o.op for o in program.graph.ops]
    assert {"GREATER_EQUAL", "EQUAL", "BITWISE_XOR", "SELECT"} <= set(ops) and "TABLE" not in ops


class Tail(nn.Module):
    """Two activations: maximum, minimum, comparisons + where, abs, mish, flip; reductions over the last dim of a
    3-D tensor (amax, amin, sum, mean) and over two dims with keepdim."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):  # [1, 4, 8]
        a, b = self.a(x), self.b(x)
        m = torch.maximum(a, b) - torch.minimum(a, b).abs()
        w = torch.where(a > b, a, b) + torch.where(a <= b, a.flip(-1), 0.0) + torch.where(a != b, b, a)
        r = torch.cat([m.amax(-1), m.amin(-1), w.sum(-1), w.mean(dim=-1)], -1)
        return r, w.amax(dim=(0, 2), keepdim=True).flatten(1), (a.flip((1, 2)) + F.mish(b)).flatten(1)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_two_activation_ops_flip_and_reductions_equal_pt2e_simulation(scheme):
    torch.manual_seed(1)
    model, x = Tail().eval(), torch.randn(24, 4, 8)
    gm = tabula.quantize(model, (x[:1],), x[:16], scheme=scheme)
    program = tabula.lower(gm)
    for t in x[16:]:
        with torch.no_grad():
            sims = [s.numpy() for s in gm(t[None])]
        for got, sim, q in zip(program.run(t[None].numpy()), sims, program.output_qparams):
            assert np.abs(got - sim).max() / q.scale <= (1.0 + 1e-3 if scheme == "int8" else 4.0)
    ops = {o.op for o in program.graph.ops}
    assert {"MAXIMUM", "MINIMUM", "TABLE", "GREATER", "GREATER_EQUAL", "EQUAL", "SELECT", "REVERSE", "REDUCE_MAX",
            "REDUCE_MIN", "REDUCE_SUM"} <= ops


class Classifier(nn.Module):
    """A small CNN whose last op is argmax (the class index on the device), and argmax over the channels."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 4, 3), nn.Linear(4 * 36, 10)

    def forward(self, x):  # [1, 1, 8, 8]
        y = torch.relu(self.conv(x))
        return self.fc(y.flatten(1)).argmax(-1), y.argmax(1)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_argmax_indices_equal_pt2e_simulation(scheme):
    torch.manual_seed(2)
    model, x = Classifier().eval(), torch.randn(24, 1, 8, 8)
    gm = tabula.quantize(model, (x[:1],), x[:16], scheme=scheme)
    program = tabula.lower(gm)
    assert [program.graph.tensors[t].dtype for t in program.graph.outputs] == ["int32", "int32"]
    for t in x[16:]:
        with torch.no_grad():
            sims = [s.numpy() for s in gm(t[None])]
        for got, sim in zip(program.run(t[None].numpy()), sims):
            np.testing.assert_array_equal(got.reshape(sim.shape), sim)


def test_argmax_over_a_4d_tensors_spatial_dim_is_refused_up_front():
    class M(nn.Module):
        def forward(self, x):
            return x.argmax(2)

    x = torch.randn(4, 2, 3, 5)
    with pytest.raises(UnsupportedOpError, match="dim 2 of a 4-D tensor"):
        tabula.quantize(M().eval(), (x[:1],), x)


class Every(nn.Module):
    def __init__(self):
        super().__init__()
        self.tail = Tail()
        self.head = nn.Linear(8, 5)

    def forward(self, x):  # [1, 4, 8]
        r, w, f = self.tail(x)
        return r, w, f, self.head(x.mean(1)).argmax(-1)


@pytest.mark.host
def test_every_family_bit_exact_on_host(tmp_path):
    torch.manual_seed(3)
    model, x = Every().eval(), torch.randn(24, 4, 8)
    torch.export.save(torch.export.export(model, (x[:1],)), tmp_path / "m.pt2")
    np.savez(tmp_path / "calib.npz", x=x[:16].numpy())
    np.savez(tmp_path / "test.npz", x=x[16:].numpy())
    scons("board=host", "scheme=int8", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'm.pt2'}",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}", "name=tail")
    r = json.loads((tmp_path / "b" / "host" / "tail" / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
    ops = {o["op"] for o in json.loads((tmp_path / "b" / "host" / "tail" / "ir.json").read_text())["ops"]}
    assert {"MAXIMUM", "MINIMUM", "GREATER", "EQUAL", "SELECT", "REVERSE", "REDUCE_MIN", "ARGMAX"} <= ops
    # the class index: elements that differ from the float model's argmax, no SQNR; the headline SQNR is the
    # worst of the three value outputs
    program, xt = tabula.load(tmp_path / "b" / "host" / "tail"), x[16:]
    with torch.no_grad():
        floats = [model(xt[i : i + 1]) for i in range(len(xt))]
    index = np.concatenate([f[3].numpy() for f in floats])
    ref = program.run(xt.numpy())[3]
    outs = r["outputs"]
    assert outs[3]["sqnr_db_vs_float"] is None and outs[3]["differ_from_float"] == int((ref != index).sum())
    assert all("differ_from_float" not in o and o["sqnr_db_vs_float"] is not None for o in outs[:3])
    assert r["sqnr_db_vs_float"] == min(o["sqnr_db_vs_float"] for o in outs[:3])
