"""SCons and the CLI take several inputs (x0, x1, ... in the .npz) and report each output."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from helpers import scons


class TwoInTwoOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 4), nn.Linear(3, 4)

    def forward(self, x, y):
        h = torch.tanh(self.a(x) + self.b(y))
        return h, torch.sigmoid(h) * 2.0


@pytest.mark.host
def test_two_inputs_and_two_outputs_through_scons(tmp_path):
    torch.manual_seed(0)
    m = TwoInTwoOut().eval()
    x0, x1 = np.random.default_rng(0).standard_normal((2, 40, 6)).astype(np.float32)
    x1 = x1[:, :3]
    torch.export.save(torch.export.export(m, (torch.from_numpy(x0[:1]), torch.from_numpy(x1[:1]))), tmp_path / "two.pt2")
    np.savez(tmp_path / "calib.npz", x0=x0[:32], x1=x1[:32])
    np.savez(tmp_path / "test.npz", x0=x0[32:], x1=x1[32:])
    build = tmp_path / "b"
    p = scons("board=host", f"model={tmp_path / 'two.pt2'}", f"calib={tmp_path / 'calib.npz'}",
              f"data={tmp_path / 'test.npz'}", f"build_dir={build}")
    r = json.loads((build / "host" / "two" / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
    assert [o["shape"] for o in r["outputs"]] == [[4], [4]] and all(o["sqnr_db_vs_float"] > 12 for o in r["outputs"]), [o["sqnr_db_vs_float"] for o in r["outputs"]]
    assert p.stdout.count("output ") >= 2  # one line per output
    # a file that gives one input to a two-input model: one line naming both counts
    np.savez(tmp_path / "one.npz", x=x0[:4])
    q = scons("board=host", f"model={tmp_path / 'two.pt2'}", f"calib={tmp_path / 'one.npz'}", f"build_dir={build}",
              "name=one", check=False)
    assert q.returncode != 0 and "the model takes 2 input(s) but" in q.stderr + q.stdout
