"""Indexing by a tensor at model level (the IR op GATHER): gather, index, index_select, as_strided, unfold with
constant indices (3-D and NCHW 4-D inputs, negative and repeated indices, two index tensors, a storage
offset), the writes index_put / index_copy / select_scatter / slice_scatter (constant values, a value outside
the input's range, a step, an activation written), and embedding at argmax indices (a 4-D output too).
Each lowered program copies codes: it equals PT2E's simulation of the same quantized graph exactly (to
float rounding, far below one LSB), int8 and a16w8, with no RESCALE or TABLE; the constant index maps are
GATHERs (C > 1 where rows stay whole).  Refusals up front: computed indices, ``accumulate=True``, argmax
indices beyond the table.  One host build of argmax -> embedding -> linear is bit-exact against the Python
reference (the GATHER kernel has its C == Python tests in tests/ops/test_gather.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from helpers import scons
from tabula.errors import UnsupportedOpError


class Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


T = torch.tensor
I3, I4 = (1, 8, 16), (1, 4, 3, 5)

#: name -> (function of the input, input shape)
CASES = {
    "gather": (lambda x: torch.gather(x, -1, T([[[3, 0, 5, 1]] * 8])), I3),
    "gather 4-D dim 2": (lambda x: torch.gather(x, 2, T([[[[2, 0, 1, 2, 2]] * 2] * 4])), I4),
    "index": (lambda x: x[:, :, T([0, 3, 5])], I3),
    "index negative, repeated": (lambda x: x[:, :, T([-1, 0, -1, 7])], I3),
    "index channels 4-D": (lambda x: x[:, T([3, 1])], I4),
    "index two tensors": (lambda x: x[:, T([0, 7, 7]), T([15, 0, 2])], I3),
    "index_select": (lambda x: x.index_select(2, T([0, 3, 5])), I3),
    "index_select rows": (lambda x: x.index_select(1, T([6, 1, 1])), I3),
    "index_select 4-D channels": (lambda x: x.index_select(1, T([2, 0, 3])), I4),
    "as_strided": (lambda x: torch.as_strided(x, (1, 8, 8), (128, 16, 2)), I3),
    "as_strided offset": (lambda x: torch.as_strided(x, (3, 5), (7, 3), 4), I3),
    "unfold": (lambda x: x.unfold(-1, 4, 2), I3),
    "unfold 4-D input": (lambda x: x.unfold(2, 2, 1), I4),
    "index_put": (lambda x: x.index_put((T([0]), T([1, 3])), T(0.5)), I3),
    "index_put outside the range": (lambda x: x.index_put((T([0]), T([2])), T(9.0)), I3),
    "index_put rows": (lambda x: x.index_put((T([0]), T([5, 2])), torch.linspace(-1, 1, 16)), I3),
    "index_copy": (lambda x: x.index_copy(1, T([0, 2]), torch.zeros(1, 2, 16)), I3),
    "select_scatter": (lambda x: torch.select_scatter(x, torch.zeros(1, 16), 1, 0), I3),
    "select_scatter an activation": (lambda x: torch.select_scatter(x, x[:, 3] * 1.0, 1, 0), I3),
    "slice_scatter": (lambda x: torch.slice_scatter(x, torch.zeros(1, 2, 16), 1, 0, 2), I3),
    "slice_scatter step": (lambda x: torch.slice_scatter(x, torch.full((1, 8, 4), -0.25), 2, 1, 9, 2), I3),
}
#: writes whose written values get no grid of their own (an activation: select, then a mul)
NOT_ONLY_MOVES = {"select_scatter an activation"}


def _quantized(model, shape, scheme, seed):
    torch.manual_seed(seed)
    x = 3 * torch.randn((24,) + shape[1:])
    gm = tabula.quantize(model.eval(), (x[:1],), x[:16], scheme=scheme)
    return gm, tabula.lower(gm), x[16:]


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
@pytest.mark.parametrize("name", list(CASES))
def test_constant_index_moves_equal_pt2e_simulation_exactly(name, scheme):
    f, shape = CASES[name]
    gm, program, test = _quantized(Fn(f), shape, scheme, seed=len(name))
    ops = [o.op for o in program.graph.ops]
    assert "GATHER" in ops
    if name not in NOT_ONLY_MOVES:
        assert not {"RESCALE", "TABLE"} & set(ops), ops
    scale = program.output_qparams[0].scale
    for t in test:
        with torch.no_grad():
            sim = gm(t[None]).numpy()
        (got,) = program.run(t[None].numpy())
        assert got.shape == sim.shape
        np.testing.assert_allclose(got, sim, rtol=0, atol=1e-3 * scale)


def test_whole_rows_are_one_copy_each():
    """index_select of rows along dim 1 of [1, 8, 16] is GATHER of 16-element rows; select_scatter of row 0 the
    same over x's rows and the written row (CONCAT of the two first)."""
    for name in ("index_select rows", "select_scatter"):
        _, program, _ = _quantized(Fn(CASES[name][0]), I3, "int8", 0)
        (op,) = [o for o in program.graph.ops if o.op == "GATHER"]
        values, index = (program.graph.tensors[n] for n in op.inputs)
        assert values.shape[2] == 16 and index.shape == (1, 3 if name == "index_select rows" else 8)
    idx = program.graph.constants[op.inputs[1]]
    assert idx.tolist() == [[8, 1, 2, 3, 4, 5, 6, 7]]  # row 0 from the written row (after x's 8)


class Embed(nn.Module):
    """argmax -> embedding -> linear (indices the model computes: tabula's inputs are float)."""

    def __init__(self, rows=16, dim=6):
        super().__init__()
        self.emb, self.fc = nn.Embedding(rows, dim), nn.Linear(dim, 3)

    def forward(self, x):
        return self.fc(self.emb(x.argmax(-1))), self.emb(x.argmax(-1))


class Embed4d(nn.Module):
    """argmax over the channels of an NCHW tensor: [N, H, W] indices, a 4-D [N, H, W, D] embedding."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 6)

    def forward(self, x):
        return self.emb(x.argmax(1))


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_embedding_at_argmax_indices_equals_pt2e_simulation(scheme):
    for model, shape in ((Embed(), (1, 8, 16)), (Embed4d(), (1, 5, 3, 4))):
        gm, program, test = _quantized(model, shape, scheme, seed=5)
        assert [o.op for o in program.graph.ops].count("GATHER") >= 1
        for t in test:
            with torch.no_grad():
                sims = gm(t[None])
            sims = [s.numpy() for s in (sims if isinstance(sims, tuple) else (sims,))]
            for k, (got, sim) in enumerate(zip(program.run(t[None].numpy()), sims)):
                scale = program.output_qparams[k].scale
                assert got.shape == sim.shape
                # the rows are copied exactly; the linear's RESCALE rounds ties half up (PyTorch: to even)
                np.testing.assert_allclose(got, sim, rtol=0, atol=(1.001 if k == 0 and model.__class__ is Embed
                                                                      else 1e-3) * scale)


@pytest.mark.parametrize("f,why", [
    (lambda x: torch.gather(x, -1, x.argmax(-1, keepdim=True)), "constant indices only"),
    (lambda x: x.index_put((T([0]), T([1])), T(0.5), accumulate=True), "accumulate=True"),
    (lambda x: nn.functional.embedding(x.argmax(-1), torch.randn(10, 4)), "up to 15 into a table of 10 rows"),
])
def test_what_cannot_be_lowered_is_refused_before_calibration(f, why):
    x = torch.randn(4, 8, 16)
    with pytest.raises(UnsupportedOpError, match=why):
        tabula.quantize(Fn(f).eval(), (x[:1],), x)


@pytest.mark.host
def test_argmax_embedding_linear_bit_exact_on_host(tmp_path):
    torch.manual_seed(3)
    model, x = Embed().eval(), torch.randn(24, 8, 16)
    torch.export.save(torch.export.export(model, (x[:1],)), tmp_path / "m.pt2")
    np.savez(tmp_path / "calib.npz", x=x[:16].numpy())
    np.savez(tmp_path / "test.npz", x=x[16:].numpy())
    scons("board=host", "scheme=int8", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'm.pt2'}",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}", "name=embed")
    r = json.loads((tmp_path / "b" / "host" / "embed" / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
    ops = [o["op"] for o in json.loads((tmp_path / "b" / "host" / "embed" / "ir.json").read_text())["ops"]]
    assert "ARGMAX" in ops and "GATHER" in ops
