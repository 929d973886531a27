"""The MLPerf Tiny reference models (examples/mlperf_tiny/): the float PyTorch ports against the shipped
``y_float``, the .tflite reader, and the models end to end through SCons.

The data (``../shared/mlperf_tiny/`` beside the checkout, or ``$TABULA_MLPERF_TINY``) and the
``tflite`` reader (``pip install -e '.[mlperf]'``, done by bootstrap.sh) are outside the repository;
the tests skip, saying which is missing, only when one is absent.

End to end, every model must build, run and match the Python reference bit for bit (host: every test
sample; QEMU's Cortex-M55: the first few), above a sanity floor of SQNR vs float.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch

from helpers import ROOT, scons

sys.path.insert(0, str(ROOT / "examples"))
import mlperf_tiny  # noqa: E402

MODELS = list(mlperf_tiny.SPECS)
#: test samples run end to end (all of them on the host; a few on QEMU to keep the suite short)
QEMU_SAMPLES = 4
#: int8 SQNR vs float (dB) below which a bit-exact run still fails (a sanity floor, not the goal).
#: Measured (README, MLPerf Tiny): kws 22.7, ic 13.3, ad 41.4 dB; the TFLite int8 peer reaches 25.2 /
#: 16.2 / 31.7 dB on the same test split.
MIN_SQNR_DB = {"kws": 21.0, "ic": 12.0, "ad": 39.0}


@pytest.fixture(scope="module", autouse=True)
def _need_data_and_reader():
    try:
        for name in MODELS:
            mlperf_tiny.source_files(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    pytest.importorskip("tflite", reason="the tflite reader is missing: pip install -e '.[mlperf]' (bootstrap.sh does)")


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("mlperf_build")


# ---- the float ports ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODELS)
def test_port_matches_y_float(name):
    model = mlperf_tiny.load_model(name)
    d = mlperf_tiny.load_inputs(name)
    with torch.no_grad():
        y = model(torch.from_numpy(d["x"])).numpy()
    ref = d["y_float"]
    assert y.shape == ref.shape
    assert np.abs(y - ref).max() <= 1e-4 * (ref.max() - ref.min())
    if mlperf_tiny.SPECS[name].task == "classification":
        assert (y.argmax(1) == ref.argmax(1)).all()
        np.testing.assert_allclose(y.sum(1), 1.0, atol=1e-5)  # softmax rows


def test_kws_hybrid_weights_load_dequantized():
    """The "float" kws file stores its CONV_2D weights as int8 with one scale; the reader returns
    q * scale, so every value is an integer multiple of the scale within [-127, 127]."""
    from tabula.importers.tflite_reader import read_tflite

    ops = read_tflite(mlperf_tiny.source_files("kws")[0])
    convs = [op for op in ops if op.type == "CONV_2D"]
    assert len(convs) == 5
    for op in convs:
        w = op.inputs[1]
        assert w.dtype == "INT8" and len(w.scale) == 1 and w.data.dtype == np.float32
        q = w.data / w.scale[0]
        np.testing.assert_allclose(q, np.round(q), atol=1e-3)
        assert np.abs(np.round(q)).max() <= 127 and np.abs(q).max() > 60  # the int8 range is used
    dw = [op for op in ops if op.type == "DEPTHWISE_CONV_2D"]
    assert len(dw) == 4 and all(op.inputs[1].dtype == "FLOAT32" for op in dw)


def test_same_padding_follows_tflite():
    from mlperf_tiny.models import same_pads

    assert same_pads((49, 10), (10, 4), (2, 2)) == (4, 5, 1, 1)  # kws first conv: more at the bottom
    assert same_pads((32, 32), (3, 3), (2, 2)) == (0, 1, 0, 1)  # ResNet-8 stride-2 3x3
    assert same_pads((32, 32), (1, 1), (2, 2)) == (0, 0, 0, 0)
    assert same_pads((25, 5), (3, 3), (1, 1)) == (1, 1, 1, 1)


def test_a_file_that_is_not_the_port_is_refused():
    from mlperf_tiny.models import DSCNN, TFLiteMismatch

    with pytest.raises(TFLiteMismatch, match="DSCNN port expects"):
        DSCNN.from_tflite(mlperf_tiny.source_files("ad")[0])


# ---- end to end ----------------------------------------------------------------------------------
def _run(name, board, build_dir, *extra):
    """scons board=<board> example=<name>; returns results.json (fails with SCons's output otherwise)."""
    p = scons(f"board={board}", f"example={name}", f"build_dir={build_dir}", *extra, check=False)
    if p.returncode != 0:
        raise AssertionError(f"scons example={name} board={board} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return json.loads((build_dir / board / name / "results.json").read_text())


@pytest.mark.host
@pytest.mark.parametrize("name", MODELS)
def test_mlperf_on_host_int8_is_bit_exact(name, build_dir):
    """Every shipped input (samples=all: the calibration and the test split) runs bit-exact."""
    r = _run(name, "host", build_dir, "samples=all")
    n_all = len(mlperf_tiny.load_inputs(name)["x"])
    assert r["n_samples"] == r["n_outputs_received"] == n_all
    assert r["bit_exact_mismatches"] == 0
    assert r["sqnr_db_vs_float"] > MIN_SQNR_DB[name]
    test = np.load(build_dir / "host" / "examples" / name / "test.npz")
    calib = np.load(build_dir / "host" / "examples" / name / "calib.npz")
    assert not set(test["index"]) & set(calib["index"])  # never calibrated on a test sample


@pytest.mark.qemu
@pytest.mark.parametrize("name", MODELS)
def test_mlperf_on_corstone300_int8_is_bit_exact(name, build_dir):
    r = _run(name, "corstone300", build_dir, f"limit={QEMU_SAMPLES}")
    assert r["runner"] == "qemu" and r["n_outputs_received"] == QEMU_SAMPLES
    assert r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert r["instructions_per_inference"] > 50_000  # ad int8 runs 86,756 since the Helium GEMM (issue 11)
    assert r["arena_bytes"] < r["ram_bytes"]


@pytest.mark.host
def test_resnet8_from_its_float_tflite_without_a_port(build_dir):
    """model=pretrainedResnet.tflite (tabula.importers.tflite, no hand-written port) on the example's own
    calibration and every shipped input: bit-exact, and the port's integer program (the same IR
    constants and ops) and SQNR."""
    port = _run("ic", "host", build_dir, "samples=all")  # nothing to rebuild when the test above ran
    ex = build_dir / "host" / "examples" / "ic"
    scons("board=host", f"model={mlperf_tiny.source_files('ic')[0]}", f"calib={ex / 'calib.npz'}",
          f"data={ex / 'all.npz'}", f"build_dir={build_dir}")
    out = build_dir / "host" / "pretrainedResnet"
    r = json.loads((out / "results.json").read_text())
    assert r["n_outputs_received"] == port["n_outputs_received"] == 32 and r["bit_exact_mismatches"] == 0
    assert r["sqnr_db_vs_float"] == pytest.approx(port["sqnr_db_vs_float"], abs=0.011)
    a, b = (np.load(d / "ir.npz") for d in (out, build_dir / "host" / "ic"))
    assert sorted(v.tobytes() for v in a.values()) == sorted(v.tobytes() for v in b.values())
    ops = [[o["op"] for o in json.loads((d / "ir.json").read_text())["ops"]] for d in (out, build_dir / "host" / "ic")]
    assert ops[0] == ops[1]
