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
