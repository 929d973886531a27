"""Stages that need no torch do not import it: ``import tabula.cli``, ``tabula codegen``, ``tabula report``, ``tabula show``,
``tabula boards`` (and ``tabula run --float``: tests/codegen/test_profile.py, which has a firmware to run).
Each runs in a fresh interpreter that reports whether any ``torch``/``torchao`` module got loaded.
(Importing torch costs about 1.5 s of CPU; codegen went from 2.0 s to 0.5 s, show from 1.6 s to 0.3 s.)"""
from __future__ import annotations

import json
import subprocess
import sys


from helpers import PROBE, torch_modules


def test_import_cli_and_boards_without_torch():
    assert torch_modules() == 0
    assert torch_modules("boards") == 0


def test_codegen_and_show_without_torch(digits_program, tmp_path):
    digits_program.save(tmp_path / "ir")
    assert torch_modules("codegen", "--ir", str(tmp_path / "ir"), "--out", str(tmp_path / "src"),
                         "--board", "corstone300") == 0
    assert (tmp_path / "src" / "model.c").is_file()
    (tmp_path / "results.json").write_text(json.dumps({"board": "host", "bit_exact_mismatches": 0}))
    assert torch_modules("show", str(tmp_path / "results.json")) == 0
    # the report of a build folder (IR, src/): torch-free like codegen
    assert torch_modules("report", "--ir", str(tmp_path / "ir"), "--out", str(tmp_path / "ir"), "--board", "corstone300") == 0
    assert (tmp_path / "ir" / "report.html").is_file()


def test_quantize_still_imports_torch(tmp_path):
    """The probe can see torch: a stage that needs it (quantize, even when it fails on a missing file)."""
    p = subprocess.run([sys.executable, "-c", PROBE, "quantize", "--model", str(tmp_path / "no.pt2"), "--calib",
                        str(tmp_path / "no.npz"), "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not found" in p.stderr
    assert int([ln for ln in p.stdout.splitlines() if ln.startswith("TORCH-MODULES")][-1].split()[1]) > 0


def test_an_scons_build_imports_torch_in_one_stage(digits_dir, tmp_path):
    """The quantize stage also writes the float outputs (``--float-data``): the build runs no ``tabula float``
    (one torch + torchao import, not two), and its files are the ones ``tabula float`` writes."""
    import os

    import numpy as np

    from helpers import scons

    p = scons("board=host", f"build_dir={tmp_path / 'b'}", "quiet=1", "limit=20", "name=d",
              f"model={digits_dir / 'model.pt2'}", f"calib={digits_dir / 'calib.npz'}", f"data={digits_dir / 'test.npz'}")
    stages = [ln.split("tabula.cli ", 1)[1].split()[0] for ln in p.stdout.splitlines() if " -m tabula.cli " in ln]
    assert "float" not in stages and stages.count("quantize") == 1, stages
    out = tmp_path / "b" / "host" / "d"
    assert json.loads((out / "results.json").read_text())["bit_exact_mismatches"] == 0
    f = subprocess.run([sys.executable, "-m", "tabula.cli", "float", "--model", str(digits_dir / "model.pt2"), "--ir",
                        str(out), "--data", str(digits_dir / "test.npz"), "--out", str(tmp_path / "f.npz"), "--layers",
                        str(tmp_path / "l.npz"), "--limit", "20"], capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert f.returncode == 0, f.stderr
    for mine, theirs in ((out / "float_outputs.npz", tmp_path / "f.npz"), (out / "float_layers.npz", tmp_path / "l.npz")):
        with np.load(mine) as a, np.load(theirs) as b:
            assert sorted(a.files) == sorted(b.files) and all(np.array_equal(a[k], b[k]) for k in a.files)
