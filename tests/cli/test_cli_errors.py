"""Bad input a user can fix ends in one ``tabula: error:`` line (exit code 2), never a traceback."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula.stages import StageError, run_and_report


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tabula.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Sigmoid(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3)).eval()
    x = torch.randn(8, 1, 6, 6)
    torch.export.save(torch.export.export(m, (x[:1],)), d / "tiny.pt2")
    np.savez(d / "calib.npz", x=x.numpy())
    np.savez(d / "empty.npz", x=np.zeros((0, 1, 6, 6), np.float32))
    with torch.no_grad():
        m[3].weight[0, 0] = float("nan")
    torch.export.save(torch.export.export(m, (x[:1],)), d / "nan.pt2")
    return d


@pytest.mark.parametrize("model,calib,message", [
    ("tiny.pt2", "empty.npz", "holds no samples"),
    ("nan.pt2", "calib.npz", "contains NaN or Inf"),
    ("missing.pt2", "calib.npz", "not found"),
])
def test_quantize_errors_are_one_line(tiny, tmp_path, model, calib, message):
    p = _cli("quantize", "--model", str(tiny / model), "--calib", str(tiny / calib), "--out", str(tmp_path / "o"))
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[0].startswith("tabula: error:")
    assert not (tmp_path / "o" / "ir.json").exists()


def test_test_data_is_checked_before_anything_runs(tiny, tmp_path):
    out = tmp_path / "prog"
    x = torch.from_numpy(np.load(tiny / "calib.npz")["x"])
    tabula.lower(tabula.quantize(torch.export.load(str(tiny / "tiny.pt2")), (x[:1],), x)).save(out)
    np.savez(tmp_path / "labels.npz", x=x.numpy(), y=np.zeros(3, np.int64))
    np.savez(tmp_path / "shape.npz", x=np.zeros((4, 2, 6, 6), np.float32))
    for data, msg in [("labels.npz", "labels for 8 samples"), ("shape.npz", r"the model expects \(1, 6, 6\)")]:
        with pytest.raises(StageError, match=msg):
            run_and_report(tmp_path / "no.elf", "host", out, tmp_path / data, tiny / "tiny.pt2", tmp_path)
