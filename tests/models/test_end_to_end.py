"""The whole chain through SCons: digits on the host build and on the emulated Corstone-300, a
user's own model, incremental rebuilds, and the errors a user meets first."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from helpers import scons


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("build")


def _results(build_dir, board, name="digits"):
    return json.loads((build_dir / board / name / "results.json").read_text())


def test_digits_on_host_is_bit_exact_and_incremental(build_dir):
    scons("board=host", f"build_dir={build_dir}")
    r = _results(build_dir, "host")
    assert r["n_samples"] == 360 and r["n_outputs_received"] == 360
    assert r["bit_exact_mismatches"] == 0
    assert r["float_accuracy"] > 0.9
    assert abs(r["device_accuracy"] - r["float_accuracy"]) <= 0.01
    assert r["device_accuracy"] == r["reference_accuracy"]
    assert r["arena_bytes"] >= 1000  # conv outputs int8 (requantized in the epilogue), two live at once
    # every stage left its file
    out = build_dir / "host" / "digits"
    for f in ["ir.json", "ir.npz", "quantized_graph.txt", "src/model.c", "src/model.h", "run.log"]:
        assert (out / f).is_file(), f
    # nothing changed -> nothing to rebuild
    q = scons("-q", "board=host", f"build_dir={build_dir}", str(out / "results.json"), check=False)
    assert q.returncode == 0, q.stdout + q.stderr


@pytest.mark.qemu
def test_digits_on_corstone300_qemu(build_dir, digits_m55_build):
    # the session's corstone300 digits build (conftest: the same train.py, built once for several tests)
    p = scons("board=corstone300", f"build_dir={digits_m55_build.build_dir}", *digits_m55_build.args)
    assert "bit_exact_mismatches" in p.stdout  # the table is printed
    r = _results(digits_m55_build.build_dir, "corstone300")
    assert r["runner"] == "qemu" and r["n_outputs_received"] == 360
    assert r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert abs(r["device_accuracy"] - r["float_accuracy"]) <= 0.01
    assert 10_000 < r["instructions_per_inference"] < 5_000_000
    assert 2_000 < r["flash_bytes"] < 512 * 1024
    assert r["arena_bytes"] < r["ram_bytes"] < 512 * 1024
    # placed from board.toml [memory]: constants in ITCM, the arena in DTCM, nothing elsewhere
    mem = {m["region"]: m for m in r["memory"]}
    assert mem["itcm"]["constants"] > 0 and mem["dtcm"]["arena"] == r["arena_bytes"]
    assert all(m["constants"] == m["arena"] == m["used"] == 0 for k, m in mem.items() if k not in ("itcm", "dtcm"))
    # the same integer program ran on host and on the M55
    host = build_dir / "host" / "digits"
    if host.is_dir():
        assert (host / "src/model.c").read_bytes() == (digits_m55_build.out / "src/model.c").read_bytes()


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))
        self.fc = nn.Linear(3 * 3 * 4, 4)

    def forward(self, x):
        return self.fc(torch.flatten(torch.sigmoid(self.conv(x)), 1))


def test_users_own_model_through_scons(tmp_path, build_dir):
    torch.manual_seed(0)
    x = torch.randn(40, 2, 5, 5)
    torch.export.save(torch.export.export(_Tiny().eval(), (x[:1],)), tmp_path / "tiny.pt2")
    np.savez(tmp_path / "calib.npz", x=x.numpy())
    np.savez(tmp_path / "test.npz", x=x[:10].numpy())
    scons("board=host", f"build_dir={build_dir}", f"model={tmp_path / 'tiny.pt2'}", f"calib={tmp_path / 'calib.npz'}",
          f"data={tmp_path / 'test.npz'}")
    r = _results(build_dir, "host", "tiny")
    assert r["n_samples"] == 10 and r["bit_exact_mismatches"] == 0
    assert r["float_accuracy"] is None  # no labels given
    assert r["sqnr_db_vs_float"] > 20


class _Cumprod(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)


def test_cli_names_the_unsupported_op_without_traceback(tmp_path):
    x = torch.randn(4, 6)
    torch.export.save(torch.export.export(_Cumprod(), (x[:1],)), tmp_path / "c.pt2")
    np.savez(tmp_path / "calib.npz", x=x.numpy())
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "quantize", "--model", str(tmp_path / "c.pt2"), "--calib",
                        str(tmp_path / "calib.npz"), "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert p.returncode == 2
    assert "aten.cumprod" in p.stderr and "test_end_to_end.py:" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "out" / "ir.json").exists()


def test_missing_cross_compiler_is_one_clear_line(tmp_path, build_dir):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = {**os.environ, "PATH": str(bindir)}
    p = scons("board=corstone300", "run=0", f"build_dir={build_dir}", env=env, check=False)
    assert p.returncode != 0
    assert "arm-none-eabi-gcc" in p.stderr and "apt-get install" in p.stderr
    assert "Traceback" not in p.stderr + p.stdout


def test_misspelled_or_unknown_scons_options_are_refused(tmp_path):
    for args, word in ((["shceme=a16w8"], "shceme=a16w8"), (["scheme=a16w16"], "a16w16")):
        p = scons("board=host", "run=0", f"build_dir={tmp_path}", *args, check=False)
        assert p.returncode != 0 and word in p.stderr and "Traceback" not in p.stderr + p.stdout
    assert not any(tmp_path.iterdir())  # nothing built


@pytest.mark.qemu
def test_digits_a16w8_on_corstone300_qemu(build_dir):
    scons("board=corstone300", "scheme=a16w8", f"build_dir={build_dir}")
    r = _results(build_dir, "corstone300", "digits-a16w8")
    assert r["n_outputs_received"] == 360 and r["bit_exact_mismatches"] == 0
    assert abs(r["device_accuracy"] - r["float_accuracy"]) <= 0.01
    ir = json.loads((build_dir / "corstone300/digits-a16w8/ir.json").read_text())
    dtypes = {t["name"]: t["dtype"] for t in ir["tensors"]}
    assert dtypes[ir["inputs"][0]] == "int16" and dtypes[ir["outputs"][0]] == "int16"
    assert "int48" in dtypes.values()  # int48 accumulators
    int8 = build_dir / "corstone300/digits/results.json"
    if int8.is_file():  # int16 activations are more faithful to float than int8
        assert r["sqnr_db_vs_float"] > json.loads(int8.read_text())["sqnr_db_vs_float"] + 3


def test_input_larger_than_4_kib_runs_bit_exact_on_host(tmp_path, build_dir):
    # 1 x 1 x 90 x 90 int8 = 8100 bytes in one INPUT frame (the device sizes its buffer from model.h)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, stride=4), nn.Flatten(), nn.Linear(2 * 22 * 22, 3)).eval()
    x = torch.randn(6, 1, 90, 90)
    torch.export.save(torch.export.export(model, (x[:1],)), tmp_path / "wide.pt2")
    np.savez(tmp_path / "calib.npz", x=x.numpy())
    scons("board=host", f"build_dir={build_dir}", f"model={tmp_path / 'wide.pt2'}", f"calib={tmp_path / 'calib.npz'}")
    r = _results(build_dir, "host", "wide")
    assert r["n_outputs_received"] == 6 and r["bit_exact_mismatches"] == 0
