"""Vela's Ethos-U estimates next to tabula's Cortex-M55 (Helium) figures, per model.

    python benchmarks/npu.py                                  # digits, mobilenet, kws, ic, ad on ethos-u55-128
    python benchmarks/npu.py --models kws --targets ethos-u55-64,ethos-u55-256,ethos-u65-256

Per model and target, two SCons builds on ``board=corstone300`` (QEMU ``mps3-an547``):

* ``scons example=<model> npu=<target> npu_driver=standin``: the NPU plan (partition, Vela 5.2.0 compile)
  and its firmware with the test-only driver stand-in, run on QEMU: ``mism`` is the stand-in run's
  mismatches against the Python reference (the NPU path -- offsets, copies, segment boundaries -- checked
  bit for bit; the NPU's own arithmetic is checked only on an FVP or silicon).  From the plan: NPU / CPU IR
  ops, Vela's estimated NPU cycles and time at the system configuration's clock (``Ethos_U55_High_End_Embedded``:
  500 MHz), the SRAM (scratch) and flash (weights, command streams) Vela reports, and the instructions the
  CPU segments took on the M55 in that run (0 when every op is on the NPU).
* ``scons example=<model>``: the same model on the M55 alone (Helium kernels): instructions per inference
  under ``qemu -icount shift=0``.

``--limit`` test samples per run (default 4: the figures are per inference).  Prints one table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
MODELS = ["digits", "mobilenet", "kws", "ic", "ad"]


def scons(args: list[str]) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", "-C", str(ROOT), *args], capture_output=True,
                       text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    err = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.startswith(("tabula: error", "scons: ***", "scons: "))]
    return p.returncode, (err[0] if err else "")


def results(build_dir: Path, name: str) -> dict:
    return json.loads((build_dir / "corstone300" / name / "results.json").read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--targets", default="ethos-u55-128")
    ap.add_argument("--limit", type=int, default=4)
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "bench"))
    a = ap.parse_args(argv)
    build_dir = Path(a.build_dir).resolve()
    common = ["board=corstone300", f"build_dir={build_dir}", f"limit={a.limit}"]
    head = (f"{'model':10} {'target':14} {'NPU/CPU ops':>11} {'NPU cycles':>11} {'NPU time':>10} {'SRAM B':>8} "
            f"{'flash B':>8} {'CPU seg instr':>13} {'mism':>4} | {'M55 instr/inf':>13} {'M55 mism':>8}")
    rows = [head, "-" * len(head)]
    for model in a.models.split(","):
        rc, err = scons(common + [f"example={model}"])
        cpu = results(build_dir, model) if rc == 0 else None
        m55 = (f"{cpu['instructions_per_inference']:>13,} {cpu['bit_exact_mismatches']:>8}" if cpu
               else f"skipped: {err}")
        for target in a.targets.split(","):
            rc, err = scons(common + [f"example={model}", f"npu={target}", "npu_driver=standin"])
            if rc != 0:
                rows.append(f"{model:10} {target:14} skipped: {err}")
                continue
            r = results(build_dir, f"{model}-{target}-standin")
            t = r["npu"]["totals"]
            instr = t.get("cpu_instructions")
            rows.append(f"{model:10} {target:14} {t['npu_ops']:>5}/{t['cpu_ops']:<5} {t['cycles']:>11,} "
                        f"{t['time_s'] * 1e6:>7.1f} us {t['sram_bytes']:>8,} {t['flash_bytes']:>8,} "
                        f"{'-' if instr is None else format(instr, ','):>13} {r['bit_exact_mismatches']:>4} | {m55}")
    print("Ethos-U (Vela 5.2.0 estimates; Ethos_U55_High_End_Embedded / Shared_Sram, U65: Ethos_U65_High_End / "
          f"Dedicated_Sram) next to the Cortex-M55 alone; corstone300, QEMU, {a.limit} samples per run")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
