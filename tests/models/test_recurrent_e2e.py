"""nn.LSTM and a 2-layer nn.GRU in one model, unrolled (8 steps), through SCons on QEMU's Cortex-M55:
bit-exact with the Python reference, every step's weights, biases and tables one array in model.c."""
from __future__ import annotations

import json
import re

import pytest

from fixtures.recurrent_models import export
from helpers import scons

pytestmark = pytest.mark.filterwarnings("ignore:The tensor attributes")


@pytest.mark.qemu
def test_lstm_and_gru_run_bit_exact_on_corstone300(tmp_path):
    export(tmp_path, "stacked", steps=8, n_calib=32, n_test=4)
    build = tmp_path / "build"
    scons("board=corstone300", f"model={tmp_path / 'stacked.pt2'}", f"calib={tmp_path / 'calib.npz'}",
          f"data={tmp_path / 'test.npz'}", f"build_dir={build}")
    out = build / "corstone300" / "stacked"
    r = json.loads((out / "results.json").read_text())
    assert r["runner"] == "qemu" and r["n_outputs_received"] == 4
    assert r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert r["sqnr_db_vs_float"] > 25
    ir = json.loads((out / "ir.json").read_text())
    fcs = [o for o in ir["ops"] if o["op"] == "FULLY_CONNECTED"]
    weights = {o["inputs"][1] for o in fcs}
    assert len(fcs) > 100 and len(weights) == 4 * 2 + 3 * 2 * 2 + 1  # per gate W_ih, W_hh; the head
    model_c = (out / "src" / "model.c").read_text()
    arrays = re.findall(r"(?:static|extern) const int8_t (\w+)\[", model_c)
    assert len([a for a in arrays if a.endswith("_weight")]) == len(weights)  # every step reads the one array
