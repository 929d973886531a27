"""Helpers several test modules share (tests/ is on the path: ``from helpers import scons``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scons(*args, env=None, check=True, timeout=900):
    """Run SCons in the repo root with this interpreter; returns the CompletedProcess."""
    proc = subprocess.run(
        [sys.executable, "-m", "SCons", "-Q", *args], cwd=ROOT, capture_output=True, text=True,
        env=env or {**os.environ, "OMP_NUM_THREADS": "1"}, timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"scons {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


#: A fresh interpreter running ``tabula <argv>`` that prints how many torch/torchao modules got loaded.
PROBE = """
import sys
from tabula.cli import main
rc = main(sys.argv[1:]) if len(sys.argv) > 1 else 0
loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchao'))
print('TORCH-MODULES', len(loaded), loaded[:3])
sys.exit(rc)
"""


def torch_modules(*argv: str) -> int:
    """How many torch/torchao modules ``tabula <argv>`` (none: ``import tabula.cli``) loads; the command
    must succeed."""
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("TORCH-MODULES")][-1]
    return int(line.split()[1])
