"""Stages that need no torch do not import it: ``import tabula.cli``, ``tabula codegen``, ``tabula show``,
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


def test_quantize_still_imports_torch(tmp_path):
    """The probe can see torch: a stage that needs it (quantize, even when it fails on a missing file)."""
    p = subprocess.run([sys.executable, "-c", PROBE, "quantize", "--model", str(tmp_path / "no.pt2"), "--calib",
                        str(tmp_path / "no.npz"), "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not found" in p.stderr
    assert int([ln for ln in p.stdout.splitlines() if ln.startswith("TORCH-MODULES")][-1].split()[1]) > 0
