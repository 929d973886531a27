"""The convolution family end to end through SCons: depthwise / grouped convs, padding="same",
Conv1d, 1-D pools and BatchNorm run bit-exact on the host build (C == Python reference) in both
schemes, and the Helium (MVE) depthwise path equals the portable one on the emulated Cortex-M55."""
from __future__ import annotations

import json

import pytest

from fixtures.conv_family_model import DepthwiseLayer, conv_family, depthwise_shapes, export
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
def test_helium_depthwise_equals_portable_on_corstone300(tmp_path, scheme):
    """Both builds are bit-exact with the Python reference, hence with each other, on every depthwise
    case of DepthwiseShapes (full blocks, tails, gathers for M > 1, stride, dilation, 10x4 and 17x17
    kernels); Helium must be faster."""
    export(depthwise_shapes(), (8, 12, 10), tmp_path, "dws")
    results = {p: _run(tmp_path, "corstone300", scheme, "dws", portable=p)[0] for p in (False, True)}
    for r in results.values():
        assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert results[False]["instructions_per_inference"] < results[True]["instructions_per_inference"]


@pytest.mark.qemu
def test_helium_depthwise_3x3_x64_instructions_per_mac(tmp_path):
    """The benchmark layer: depthwise 3x3, 64 channels, 16x16, pad 1, int8 (+ its RESCALE).  The
    kernel's share is the 3x3 layer minus the same layer with a 1x1 kernel (8 taps of 9)."""
    counts = {}
    for k in (3, 1):
        d = tmp_path / f"k{k}"
        d.mkdir()
        export(DepthwiseLayer(k), (64, 16, 16), d, f"dw{k}", n_calib=8, n_test=2)
        for portable in (False, True):
            r, _ = _run(d, "corstone300", "int8", f"dw{k}", portable=portable)
            assert r["bit_exact_mismatches"] == 0
            counts[k, portable] = r["instructions_per_inference"]
    per_mac = {p: (counts[3, p] - counts[1, p]) / (8 * 16 * 16 * 64) for p in (False, True)}
    print(f"depthwise 3x3 x64 on 16x16: instructions per inference Helium {counts[3, False]}, portable {counts[3, True]}; "
          f"per MAC (kernel) Helium {per_mac[False]:.2f}, portable {per_mac[True]:.2f}")
    assert per_mac[False] < 2.0 and per_mac[False] * 3 < per_mac[True]
