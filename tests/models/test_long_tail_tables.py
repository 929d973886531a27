"""Issue 25's table ops of one activation at model level: selu, celu, erfinv (on a tanh: its fixed open
grid), the steps sign / round / ceil / floor, and softsign (``F.softsign``'s abs / add / div fused into one
TABLE before quantization).  int8: every output equals PT2E's simulation of the same quantized graph
(a TABLE is ``q(f(dq(c)))``); a16w8: within 1 LSB of it (the steps exactly, ties aside).  One a16w8 host
build runs the model bit-exact against the Python reference (the fused int16 kernel, steps included)."""
from __future__ import annotations

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
