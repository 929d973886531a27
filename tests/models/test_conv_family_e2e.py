"""The convolution family end to end through SCons: depthwise / grouped convs, padding="same",
Conv1d, 1-D pools and BatchNorm run bit-exact on the host build (C == Python reference) in both
schemes, and the Helium (MVE) depthwise path equals the portable one on the emulated Cortex-M55
(its instructions per MAC: benchmarks/depthwise_helium.py)."""
from __future__ import annotations

import json

import pytest

from fixtures.conv_family_model import conv_family, depthwise_shapes, export
from helpers import scons


def _run(tmp_path, board, scheme, stem, portable=False):
    scons(f"board={board}", f"scheme={scheme}", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / stem}.pt2",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}", f"portable={int(portable)}")
    name = stem + ("" if scheme == "int8" else f"-{scheme}") + ("-portable" if portable else "")
    out = tmp_path / "b" / board / name
    return json.loads((out / "results.json").read_text()), json.loads((out / "ir.json").read_text())


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_conv_family_bit_exact_on_host(tmp_path, scheme):
    export(conv_family(), (4, 10, 12), tmp_path, "family")
    r, ir = _run(tmp_path, "host", scheme, "family")
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
    assert r["sqnr_db_vs_float"] > (40 if scheme == "int8" else 45)
    ops = [o["op"] for o in ir["ops"]]
    # depthwise: dw, dw2, c1 and the three standalone BatchNorms; grouped: 2-D (2 groups) and 1-D (5 groups)
    assert ops.count("DEPTHWISE_CONV2D") == 6 and ops.count("CONCAT") == 2 and ops.count("SLICE") == 7
    assert {"MAX_POOL2D", "AVG_POOL2D", "PAD", "TRANSPOSE", "FULLY_CONNECTED"} <= set(ops)


@pytest.mark.qemu
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_helium_depthwise_is_bit_exact_on_corstone300(tmp_path, scheme):
    """The Helium build is bit-exact with the Python reference on every depthwise case of
    DepthwiseShapes (full blocks, tails, gathers for M > 1, stride, dilation, 10x4 and 17x17 kernels).
    (The portable path runs the same C on the host builds and, on the M55 itself, in
    tests/ops/test_device_paths.py; the speed of each path is benchmarks/layers.py's.)"""
    export(depthwise_shapes(), (8, 12, 10), tmp_path, "dws")
    r = _run(tmp_path, "corstone300", scheme, "dws", portable=False)[0]
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0


@pytest.mark.qemu
def test_helium_conv_and_fc_are_bit_exact_on_corstone300(tmp_path):
    """tabula_conv2d_s8_folded / tabula_fully_connected_s8 (folded bias) on every Helium path of
    ConvShapes -- 1 input channel, channel and input tails, 1x1 rows, tap tiling above 4 KiB, a 1-pixel
    map -- bit-exact with the Python reference as codegen calls them.  (The portable path: the host
    builds and tests/ops/test_device_paths.py on the M55 itself.)"""
    from fixtures.conv_family_model import conv_shapes

    export(conv_shapes(), (1, 9, 7), tmp_path, "convs", n_calib=16, n_test=4)
    r = _run(tmp_path, "corstone300", "int8", "convs", portable=False)[0]
    assert r["n_outputs_received"] == 4 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
