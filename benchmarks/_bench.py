"""What several benchmarks share: this checkout's ``python/`` on the path, SCons in the repository root, and
the test fixture models they measure, loaded from their files (the benchmarks do not put ``tests/`` on
``sys.path``: the kernel harness they use is ``tabula.harness``)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "python") not in sys.path:
    sys.path.insert(0, str(ROOT / "python"))


def scons(*args, timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run SCons in the repository root with this interpreter; raise with its output when it fails."""
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"scons {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def fixture(relpath: str):
    """The module at ``tests/<relpath>`` (a fixture model or a test module's model classes), loaded from
    its file under the name of its stem."""
    path = ROOT / "tests" / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
