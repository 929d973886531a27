"""``build.json`` (what built a folder: model, calibration, data, scheme; read by ``tabula debug`` and the
report) is written once the firmware links: a later build into the same folder that fails before that leaves
the record of the build whose files are there."""
from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import scons

pytestmark = pytest.mark.host


def test_a_failed_build_keeps_the_record_of_the_last_good_one(tmp_path, digits_dir):
    calib = np.load(digits_dir / "calib.npz")["x"][:16]
    np.savez(tmp_path / "good.npz", x=calib)
    bad = calib.copy()
    bad[3, 0, 2, 2] = np.nan
    np.savez(tmp_path / "bad.npz", x=bad)
    args = ["board=host", f"model={digits_dir / 'model.pt2'}", "run=0", "quiet=1", "name=d", f"build_dir={tmp_path / 'b'}"]
    scons(*args, f"calib={tmp_path / 'good.npz'}")
    out = tmp_path / "b" / "host" / "d"
    record = json.loads((out / "build.json").read_text())
    assert record["calib"] == str(tmp_path / "good.npz") and record["scheme"] == "int8"
    elf = (out / "firmware").read_bytes()

    failed = scons(*args, f"calib={tmp_path / 'bad.npz'}", check=False)
    assert failed.returncode != 0 and "NaN" in failed.stdout + failed.stderr
    assert json.loads((out / "build.json").read_text()) == record
    assert (out / "firmware").read_bytes() == elf
