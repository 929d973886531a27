"""Run Arm's Vela compiler (``ethos-u-vela``, the ``[npu]`` extra) on one TOSA 1.0 flatbuffer and read
back what it wrote: the command stream, the encoded weights, the scratch sizes, where each input and
output sits in the scratch region, the network summary and the per-layer figures.

Vela is started as ``python -m ethosu.vela`` from an argument vector (never a shell string) with
``--output-format raw``, the accelerator, ``--config`` (Vela's own ``Arm/vela.ini``, found beside the
installed package), ``--system-config`` and ``--memory-mode`` and ``--verbose-performance``.  What it
writes into the output folder:

* ``<name>_vela.npz``: ``cmd_data`` (bytes; starts with the driver's ``COP1`` custom-data header: it goes
  to ``ethosu_invoke_v3`` as it is), ``weight_data`` (bytes, base-pointer region ``weight_region``, 0),
  ``scratch_size`` / ``scratch_region`` (1), ``scratch_fast_size`` / ``scratch_fast_region`` (2 when the
  memory mode has a separate fast scratch), and per input / output tensor its ``shape`` (padded to 6-D),
  ``elem_size`` (bytes), ``region`` and ``offset`` (bytes into that region), in the TOSA graph's input /
  output order.  Only these numeric keys are read (``allow_pickle=False``: the quantization entries are
  pickled objects and are not needed).
* ``<name>_summary_<system config>.csv``: one row, e.g. ``cycles_npu``, ``cycles_total``,
  ``inference_time`` (seconds), ``sram_memory_used`` / ``off_chip_flash_memory_used`` (KiB), ``nn_macs``.
* stdout: the per-layer table of ``--verbose-performance`` (op, cycles, MACs, the TOSA output tensor name).

With TOSA input Vela has no CPU fallback: one operator it cannot place fails the whole compile
(:class:`VelaRefused`, with Vela's own last message line).
"""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import StageError

__all__ = ["VelaResult", "VelaRefused", "VelaMissing", "compile_tosa", "unavailable", "vela_version", "config_file",
           "PINNED_VERSION"]

#: The Vela release tabula's capability tables and tests were measured with (pyproject ``[npu]`` pins it).
PINNED_VERSION = "5.2.0"
#: Seconds one Vela compile may take (a MobileNet compiles in about a second).
TIMEOUT_S = 300


class VelaMissing(StageError):
    """``ethos-u-vela`` is not installed (or another version than :data:`PINNED_VERSION`)."""


class VelaRefused(StageError):
    """Vela refused a graph (an operator it cannot place on the accelerator): ``reason`` is Vela's message."""

    def __init__(self, reason: str):
        super().__init__(f"Vela refused the graph: {reason}")
        self.reason = reason


def vela_version() -> str | None:
    """The installed ``ethos-u-vela`` version, or None."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("ethos-u-vela")
    except PackageNotFoundError:
        return None


def unavailable() -> str | None:
    """None when the pinned Vela is installed, else one line: what is missing and how to install it."""
    v = vela_version()
    if v is None:
        return "ethos-u-vela is not installed: pip install -e '.[npu]' (bootstrap.sh does) for Arm's Vela compiler"
    if v != PINNED_VERSION:
        return (f"ethos-u-vela {v} is installed, tabula is measured with {PINNED_VERSION}: "
                f"pip install 'ethos-u-vela=={PINNED_VERSION}' (pip install -e '.[npu]')")
    return None


def config_file() -> Path:
    """Vela's own ``config_files/Arm/vela.ini`` (its system configurations and memory modes)."""
    import importlib.util

    spec = importlib.util.find_spec("ethosu")
    if spec is None or not spec.submodule_search_locations:
        raise VelaMissing(unavailable() or "ethos-u-vela is not importable")
    return Path(list(spec.submodule_search_locations)[0]) / "config_files" / "Arm" / "vela.ini"


@dataclass
class VelaResult:
    """One compiled NPU graph.  Bytes are bytes; ``*_offset`` are byte offsets into the base-pointer
    region named by ``*_region``; ``io`` shapes are Vela's (padded to 6-D)."""

    cmd_data: bytes
    weight_data: bytes
    weight_region: int
    scratch_size: int
    scratch_region: int
    scratch_fast_size: int
    scratch_fast_region: int
    inputs: list[dict]          # [{"shape", "elem_size", "region", "offset"}] in TOSA input order
    outputs: list[dict]         # the same, in TOSA output order
    summary: dict               # the summary CSV's row, numbers as float
    layers: list[dict] = field(default_factory=list)  # per-layer: {"op", "npu_op", "cycles", "macs", "name"}
    log: str = ""

    @property
    def cycles(self) -> int:
        """Vela's estimate of the NPU cycles of one inference (``cycles_total``)."""
        return int(round(self.summary.get("cycles_total", 0.0)))


def _argv(tosa_path: Path, out_dir: Path, accelerator: str, system_config: str, memory_mode: str) -> list[str]:
    return [sys.executable, "-m", "ethosu.vela", "--accelerator-config", accelerator, "--output-format", "raw",
            "--config", str(config_file()), "--system-config", system_config, "--memory-mode", memory_mode,
            "--verbose-performance", "--output-dir", str(out_dir), str(tosa_path)]


def _refusal(text: str) -> str:
    """Vela's own reason from its output (the last line that says what went wrong)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(k in ln for k in ("Error", "error", "could not", "not supported", "Unsupported", "unsupported")):
            return ln[:400]
    return (lines[-1][:400] if lines else "no output")


def _layers(text: str) -> list[dict]:
    """The rows of ``--verbose-performance``'s per-layer table (columns found from its dashed rule)."""
    lines = text.splitlines()
    rows = []
    for i, ln in enumerate(lines):
        if not ln.startswith("Original Operator") or i + 1 >= len(lines):
            continue
        rule = lines[i + 1]
        spans, j = [], 0
        while j < len(rule):
            if rule[j] == "-":
                k = j
                while k < len(rule) and rule[k] == "-":
                    k += 1
                spans.append((j, k))
                j = k
            else:
                j += 1
        heads = [ln[a:b].strip() for a, b in spans]
        for row in lines[i + 2:]:
            if not row.strip():
                break
            cells = {h: row[a:b + 1].strip() for h, (a, b) in zip(heads, spans)}
            cells["Name"] = row[spans[-1][0]:].strip()

            def num(key):
                try:
                    return int(float(cells.get(key, "0") or 0))
                except ValueError:
                    return 0

            rows.append({"op": cells.get("Original Operator", ""), "npu_op": cells.get("NNG Operator", ""),
                         "target": cells.get("Target", ""), "cycles": num("Op Cycles"), "macs": num("MAC Count"),
                         "name": cells["Name"]})
    return rows


def _io(z, kind: str) -> list[dict]:
    shapes = np.asarray(z[f"{kind}_shape"]).reshape(-1, 6) if np.asarray(z[f"{kind}_shape"]).size else np.zeros((0, 6))
    out = []
    for k in range(len(shapes)):
        out.append({"shape": [int(v) for v in shapes[k]], "elem_size": int(np.asarray(z[f"{kind}_elem_size"]).reshape(-1)[k]),
                    "region": int(np.asarray(z[f"{kind}_region"]).reshape(-1)[k]),
                    "offset": int(np.asarray(z[f"{kind}_offset"]).reshape(-1)[k])})
    return out


def compile_tosa(flatbuffer: bytes, out_dir: str | Path, accelerator: str, system_config: str, memory_mode: str,
                 name: str = "segment") -> VelaResult:
    """Compile one TOSA 1.0 flatbuffer for ``accelerator`` (e.g. ``"ethos-u55-128"``) with Vela; the
    ``.tosa`` and everything Vela writes stay in ``out_dir`` (``<name>.tosa``, ``<name>_vela.npz``, the
    summary CSV, ``<name>.vela.log``).

    Raises:
        VelaMissing: the pinned ethos-u-vela is not installed (the message says how to install it).
        VelaRefused: Vela refused the graph (an operator it cannot place); ``reason`` is its message.
        StageError: Vela did not finish within :data:`TIMEOUT_S` or wrote no output.
    """
    why = unavailable()
    if why:
        raise VelaMissing(why)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = out / f"{name}.tosa"
    src.write_bytes(flatbuffer)
    for old in list(out.glob(f"{name}_vela.npz")) + list(out.glob(f"{name}_summary_*.csv")):
        old.unlink()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        p = subprocess.run(_argv(src, out, accelerator, system_config, memory_mode), capture_output=True, text=True,
                           timeout=TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise StageError(f"Vela did not finish compiling {src} within {TIMEOUT_S} s") from None
    log = p.stdout + p.stderr
    (out / f"{name}.vela.log").write_text(log)
    npz = out / f"{name}_vela.npz"
    if p.returncode != 0 or not npz.is_file():
        raise VelaRefused(_refusal(log))
    with np.load(npz, allow_pickle=False) as z:
        res = VelaResult(
            cmd_data=np.asarray(z["cmd_data"]).tobytes(), weight_data=np.asarray(z["weight_data"]).tobytes(),
            weight_region=int(z["weight_region"]), scratch_size=int(z["scratch_size"]),
            scratch_region=int(z["scratch_region"]), scratch_fast_size=int(z["scratch_fast_size"]),
            scratch_fast_region=int(z["scratch_fast_region"]), inputs=_io(z, "input"), outputs=_io(z, "output"),
            summary={}, layers=_layers(p.stdout), log=log)
    csvs = sorted(out.glob(f"{name}_summary_*.csv"))
    if csvs:
        with csvs[0].open(newline="") as f:
            row = next(csv.DictReader(f), {})
        for k, v in row.items():
            try:
                res.summary[k] = float(v)
            except (TypeError, ValueError):
                res.summary[k] = v
    return res
