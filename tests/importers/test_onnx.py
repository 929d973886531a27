"""model=x.onnx: the digits model exported to ONNX (torch.onnx.export) goes through onnx2torch and the same
chain as its .pt2 -- the same integer program (x * sigmoid(x) is SiLU again), bit-exact on the host
build with the .pt2's SQNR; a bad file is one line."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("onnx", reason="the [onnx] extra is missing: pip install -e '.[onnx]' (bootstrap.sh does)")

import tabula  # noqa: E402
from helpers import load_example, scons  # noqa: E402
from tabula.importers import load_program  # noqa: E402


@pytest.fixture(scope="module")
def digits_onnx(digits_dir, tmp_path_factory):
    try:
        from tabula.importers.onnx import _onnx2torch

        _onnx2torch()
    except ImportError as e:
        pytest.skip(str(e))
    DigitsCNN = load_example("examples/digits/model.py").DigitsCNN

    ep = torch.export.load(str(digits_dir / "model.pt2"))
    m = DigitsCNN().eval()
    m.load_state_dict(dict(ep.state_dict))
    path = tmp_path_factory.mktemp("onnx") / "digits.onnx"
    x = torch.from_numpy(np.load(digits_dir / "calib.npz")["x"][:1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), str(path), dynamo=False)  # opset 17, what onnx2torch converts
    return path


def test_onnx_digits_is_the_same_program_as_the_pt2(digits_dir, digits_onnx):
    calib = torch.from_numpy(np.load(digits_dir / "calib.npz")["x"][:64])
    x = np.load(digits_dir / "test.npz")["x"][:32]
    outs = []
    for path in (digits_dir / "model.pt2", digits_onnx):
        ep = load_program(path)
        program = tabula.lower(tabula.quantize(ep, tuple(ep.example_inputs[0]), calib))
        outs.append(program.run(x)[0])
        ops = [o.op for o in program.graph.ops]
    assert ops.count("TABLE") == 2 and "MUL" not in ops  # silu and tanh, one TABLE each
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.host
def test_scons_takes_the_onnx_file_bit_exact_with_the_pt2_sqnr(digits_dir, digits_onnx, tmp_path):
    build = tmp_path / "b"
    scons("board=host", f"model={digits_onnx}", f"calib={digits_dir / 'calib.npz'}", f"data={digits_dir / 'test.npz'}",
          f"build_dir={build}", "limit=60")
    r = json.loads((build / "host" / "digits" / "results.json").read_text())
    assert r["n_outputs_received"] == 60 and r["bit_exact_mismatches"] == 0
    from tabula.report import sqnr_db

    # the .pt2 path's figure on the same samples (the session's digits program, calibrated alike)
    ep = torch.export.load(str(digits_dir / "model.pt2"))
    x = np.load(digits_dir / "test.npz")["x"][:60]
    with torch.no_grad():
        ref = np.concatenate([ep.module()(torch.from_numpy(x[i : i + 1])).numpy() for i in range(len(x))])
    got = tabula.load(build / "host" / "digits").run(x)[0]
    assert r["sqnr_db_vs_float"] == pytest.approx(round(sqnr_db(ref, got), 2), abs=0.011)
    # the .pt2 through the same stage (calibration alike) gives the same integer program
    from tabula.stages import quantize_and_lower

    pt2 = quantize_and_lower(digits_dir / "model.pt2", digits_dir / "calib.npz", tmp_path / "pt2")
    np.testing.assert_array_equal(got, pt2.run(x)[0])


def test_a_bad_onnx_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    np.savez(tmp_path / "c.npz", x=np.zeros((2, 4), np.float32) + np.arange(4, dtype=np.float32))
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "quantize", "--model", str(bad), "--calib",
                        str(tmp_path / "c.npz"), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.onnx is not a readable ONNX model" in lines[0] and "Traceback" not in p.stderr
