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


def run_table_graph_c(g, x, kernel_lib) -> dict:
    """Every op of a table-op graph (:func:`tabula.report.table_cases.table_op_graph`: TABLE, RESCALE,
    CLAMP, MUL, ADD, SUB) through the C kernels of the host build, in order: tensor name -> value."""
    vals = {"x": x}
    for op in g.ops:
        a = vals[op.inputs[0]]
        if op.op == "TABLE":
            out = kernel_lib.table(a, g.constants[op.inputs[1]])
        elif op.op == "RESCALE":
            at = op.attrs
            out = kernel_lib.rescale(a, input_zp=at["input_zp"], output_zp=at["output_zp"], multiplier=at["multiplier"],
                                     shift=at["shift"], output_dtype=g.tensors[op.outputs[0]].dtype)
        elif op.op == "CLAMP":
            out = kernel_lib.clamp(a, op.attrs["min"], op.attrs["max"])
        elif op.op == "MUL":
            out = kernel_lib.mul(a, vals[op.inputs[1]], op.attrs.get("shift", 0))
        else:
            assert op.op in ("ADD", "SUB"), op.op
            out = (kernel_lib.add if op.op == "ADD" else kernel_lib.sub)(a, vals[op.inputs[1]])
        vals[op.outputs[0]] = out
    return vals
