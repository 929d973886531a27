"""First-divergence debugging: where the device and the integer reference first part.

A debug firmware (``scons ... debug=1``; codegen ``debug``) answers TENSOR requests (docs/protocol.md):
it runs the last INPUT again up to one op and sends that op's output.  :func:`first_divergence` walks the
ops of ``model.c`` in order for one sample, compares each output with the reference interpreter's value of
the same IR tensor (every intermediate: :func:`tabula.reference.interpreter.run_graph` ``trace``) and stops
at the first op that differs: its index, op, kernel and source, the first element that differs (flat
index into the tensor, and its NHWC index) with both values, and how many elements differ.

A build without debug cannot answer: :func:`debug_firmware` builds the same model with ``debug=1`` into
``<build folder>/debug/`` from the build's ``build.json`` (what SConstruct records: model, calibration,
data, scheme, kernel options), as ``tabula debug`` and the run stage (on a mismatch) do.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..errors import StageError

__all__ = ["first_divergence", "debug_firmware", "compare_op", "divergence_line"]


def compare_op(graph, entry: dict, data: bytes, reference: dict) -> dict | None:
    """The first difference between the device's output ``data`` of emitted op ``entry`` (``src/ops.json``)
    and the reference's (``reference``: tensor name -> array), or None when they are equal.

    Raises:
        StageError: the device sent another number of bytes than the tensor has (firmware and IR from
            different builds)."""
    name = entry["outputs"][0]
    t = graph.tensors[name]
    if len(data) != t.nbytes:
        raise StageError(f"op {entry['index']} ({entry['op']}): the device sent {len(data)} bytes for {name}, which has "
                         f"{t.nbytes}: the firmware and the IR are from different builds; rebuild")
    dev = np.frombuffer(data, dtype=t.np_dtype).reshape(t.shape)
    ref = np.asarray(reference[name]).reshape(t.shape)
    bad = np.flatnonzero(dev.reshape(-1) != ref.reshape(-1))
    if not bad.size:
        return None
    k = int(bad[0])
    return {"op": entry["index"], "name": entry["op"], "kernel": entry.get("kernel"), "source": entry.get("source", ""),
            "tensor": name, "shape": list(t.shape), "dtype": t.dtype, "element": k,
            "index_nd": list(int(i) for i in np.unravel_index(k, t.shape)),
            "device": int(dev.reshape(-1)[k]), "reference": int(ref.reshape(-1)[k]),
            "n_differ": int(bad.size), "n_elements": int(t.numel)}


def first_divergence(elf_path, board_name: str, program, ops: list[dict], int_inputs: list[np.ndarray], sample: int,
                     runner: str | None = None, timeout_s: float | None = None, port: str | None = None,
                     probe: str | None = None, log_path=None) -> dict:
    """Run ``int_inputs`` (one sample, device layout) on the debug firmware ``elf_path`` and return the first
    op whose output differs from the reference (:func:`compare_op`, with ``sample`` and ``status``, the
    device's status of the run up to that op), or ``{"sample", "agree": True, "ops": n}`` when every op
    agrees.  ``ops``: the firmware's ``src/ops.json`` ops.

    Raises:
        DebugUnavailable: the firmware was built without debug.
        SessionError: the device failed (timeout, link), with the partial result.
        StageError: the device's tensors do not fit the IR (another build)."""
    from . import run_tensors_on_board
    from ..reference.interpreter import run_graph

    trace: dict[str, np.ndarray] = {}
    run_graph(program.graph, int_inputs, trace=trace)
    found: list[dict] = []

    def visit(op: int, data: bytes, status: int) -> bool:
        d = compare_op(program.graph, ops[op], data, trace)
        if d is not None:
            found.append({"sample": sample, **d, "status": status})
            return False
        return True

    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in int_inputs)
    run_tensors_on_board(elf_path, board_name, payload, len(ops), visit, runner=runner, timeout_s=timeout_s,
                         log_path=log_path, port=port, probe=probe)
    return found[0] if found else {"sample": sample, "agree": True, "ops": len(ops)}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def debug_firmware(out_dir) -> tuple[Path, Path]:
    """The debug firmware of build folder ``out_dir``: itself when it was built with ``debug=1`` (its
    ``src/ops.json`` says so), else the same model built with ``debug=1`` by SCons into
    ``<out_dir>/debug/`` (its own build folder and lock; SCons rebuilds only what changed, and the
    compiler is the build's, ``$TABULA_HOST_CC`` included) from this build's IR (``ir=``: the program that
    diverged, not quantized again).  Returns ``(firmware, its build folder)``.

    Raises:
        StageError: no ``build.json`` (not an SCons build folder), or the debug build failed (its first error)."""
    from .. import procs, status
    from ..boards import repo_root

    out = Path(out_dir)
    if _read(out / "src" / "ops.json").get("debug"):
        elf = next((p for p in (out / "firmware.elf", out / "firmware") if p.is_file()), None)
        if elf is not None:
            return elf, out
    how = _read(out / "build.json")
    if not all(k in how for k in ("board", "model", "calib", "data", "name")):
        raise StageError(f"{out} has no build.json naming its model and data (an SCons build folder has one): build it "
                         "with scons ... debug=1 and run tabula debug on that folder")
    args = [f"board={how['board']}", f"model={how['model']}", f"calib={how['calib']}", f"data={how['data']}",
            f"name={how['name']}", f"scheme={how.get('scheme', 'int8')}", f"portable={int(bool(how.get('portable')))}",
            "debug=1", "run=0", f"build_dir={(out / 'debug').resolve()}"]
    if all((out / f).is_file() for f in ("ir.json", "ir.npz", "tables.json", "calibration.json", "quantized_graph.txt")):
        args.append(f"ir={out.resolve()}")  # this build's program, not quantized again
    with tempfile.TemporaryDirectory(prefix="tabula-debug-") as tmp:
        status_file = Path(tmp) / "status.jsonl"
        env = {**os.environ, status.STATUS_ENV: str(status_file)}
        env.pop("TABULA_BUILD_LOCK", None)
        built = procs.run([sys.executable, "-m", "SCons", "-Q", "-C", str(repo_root()), *args], capture_output=True,
                          text=True, env=env)
        records = status.read(status_file)
    failed = status.first_error(records)
    where = next((r for r in reversed(records) if r.get("stage") == "scons" and r.get("firmware")), None)
    if built.returncode != 0 or failed is not None or where is None:
        why = failed["error"] if failed else " | ".join(ln for ln in (built.stderr or "").splitlines()[-2:] if ln.strip())
        raise StageError(f"building the debug firmware of {out} failed: {why or 'no output'}")
    return Path(where["firmware"]), Path(where["out"])


def divergence_line(d: dict) -> str:
    """One line for a :func:`first_divergence` result (``results.json`` ``first_divergence``)."""
    if d.get("op") is not None:
        return (f"first divergence on sample {d['sample']}: op {d['op']} {d['name']} ({d.get('kernel') or 'no kernel'}, "
                f"{d.get('source', '')}) writing {d['tensor']} {d['shape']} {d['dtype']}: element {d['element']} (NHWC "
                f"{d['index_nd']}) is {d['device']} on the device, {d['reference']} in the reference; {d['n_differ']} of "
                f"{d['n_elements']} elements differ")
    if d.get("agree"):
        return f"all {d.get('ops')} ops of sample {d['sample']} agree with the integer reference when read one at a time"
    return f"first divergence on sample {d.get('sample')} not found: {d.get('why', '')}"
