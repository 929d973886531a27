"""Issue 24: the MLPerf Tiny larger evaluation sets split in two -- calibrate on one half, test on the other --
with every scheme built and run on a board.

    python benchmarks/larger_split.py                                  # kws and ic on corstone300 (QEMU's M55)
    python benchmarks/larger_split.py --models ic --schemes int8,mixed@1.5
    python benchmarks/larger_split.py --board none                     # the Python reference only, no build

``kws_synth_a.npz`` (204 windows) and ``ic_crops_a.npz`` (203 crops) (mlperf_tiny's README): the even-indexed
samples calibrate (102 / 102: from 100 inputs on, ``observer="auto"`` takes the histogram grids), the odd-indexed
ones test (102 / 101), none doing both.  Each scheme is built like a user's model (``scons board=<board>
model=<model>.pt2 calib=<even>.npz data=<odd>.npz scheme=<s>``) and run on every test sample: instructions per
inference (QEMU ``-icount shift=0``), arena bytes and ``mism``, the device outputs differing from the Python
integer reference (0: bit-exact).  SQNR (dB) and top-1 agreement are against the float model's ``y_float`` on the
test half, from the reference (= the device when ``mism`` is 0); the peer is TFLite's int8 model (ai-edge-litert)
on the same test samples.  Schemes: ``int8``, ``a16w8``, ``mixed`` (its default target: the better of int8 and
a16w8 on the calibration data less 0.5 dB) and ``mixed@F`` (``budget=`` F times the int8 build's *estimated*
instructions: the cost model's own int8 figure, from ``precision.json``), ``mixed:T`` (``target_sqnr=T``).
Prints one line per model and scheme, and per model the ratios to int8's instructions.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples"))

import numpy as np  # noqa: E402

import mlperf_tiny  # noqa: E402
from tabula.report import sqnr_db  # noqa: E402

_spec = importlib.util.spec_from_file_location("_mlperf_bench", Path(__file__).with_name("mlperf_tiny.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def top1(y: np.ndarray, ref: np.ndarray) -> float:
    """The share of samples whose argmax equals the float model's."""
    return float((y.reshape(len(y), -1).argmax(1) == ref.reshape(len(ref), -1).argmax(1)).mean())


def scheme_args(scheme: str, int8_estimate: float | None) -> tuple[str, list[str]]:
    """(scheme, extra SCons arguments) of a scheme spec (``int8``, ``a16w8``, ``mixed``, ``mixed@F``,
    ``mixed:T``); raises ValueError for any other, or ``mixed@F`` before an int8 estimate exists."""
    if scheme in ("int8", "a16w8", "mixed"):
        return scheme, []
    if scheme.startswith("mixed@"):
        if int8_estimate is None:
            raise ValueError(f"{scheme}: put a mixed scheme first (its precision.json gives the int8 estimate)")
        return "mixed", [f"budget={float(scheme[6:]) * int8_estimate:.0f}"]
    if scheme.startswith("mixed:"):
        return "mixed", [f"target_sqnr={float(scheme[6:])}"]
    raise ValueError(f"unknown scheme {scheme!r}: int8, a16w8, mixed, mixed@<factor>, mixed:<dB>")


def build_and_run(board: str, build_dir: Path, name: str, files: dict[str, Path], scheme: str,
                  extra: list[str]) -> dict:
    """``scons`` one build of the split's files; results.json plus ``dir`` (the build folder), or
    ``{"skip": first error line}``."""
    cmd = [sys.executable, "-m", "SCons", "-Q", "-C", str(ROOT), f"board={board}", f"model={files['model']}",
           f"calib={files['calib']}", f"data={files['test']}", f"scheme={scheme}", f"name={name}",
           f"build_dir={build_dir}", "quiet=1", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if p.returncode != 0:
        err = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.startswith(("tabula: error", "scons: ***"))]
        return {"skip": err[0] if err else (p.stderr.strip().splitlines() or ["?"])[-1]}
    # SCons names the build folder <name>, or <name>-<scheme> for another scheme than int8
    out = build_dir / board / (name if scheme == "int8" else f"{name}-{scheme}")
    r = json.loads((out / "results.json").read_text())
    r["dir"] = out
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="kws,ic")
    ap.add_argument("--schemes", default="int8,a16w8,mixed,mixed@1.5")
    ap.add_argument("--board", default="corstone300", help="a board to build and run on, or 'none' (reference only)")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "split"))
    a = ap.parse_args(argv)
    build_dir = Path(a.build_dir).resolve()
    import torch

    import tabula

    for name in a.models.split(","):
        big = bench.load_larger(name)
        if big is None:
            print(f"{name}: no larger set on this machine (mlperf_tiny's README: {bench.LARGER.get(name)})")
            continue
        n = len(big["x"])
        cal, test = np.arange(0, n, 2), np.arange(1, n, 2)
        xt, yt = big["x"][test], big["y_float"][test]
        model = mlperf_tiny.load_model(name).eval()
        x1 = (torch.from_numpy(big["x"][:1]),)
        print(f"{name}: calibrated on the {len(cal)} even samples of {bench.LARGER[name]}, tested on its "
              f"{len(test)} odd ones" + ("" if a.board == "none" else f", built for {a.board}"))
        files = {}
        if a.board != "none":
            d = build_dir / "data" / name
            d.mkdir(parents=True, exist_ok=True)
            files = {"model": d / "model.pt2", "calib": d / "calib.npz", "test": d / "test.npz"}
            torch.export.save(torch.export.export(model, x1), str(files["model"]))
            np.savez(files["calib"], x=big["x"][cal])
            np.savez(files["test"], x=xt)
        int8_instr = int8_est = None
        for scheme in a.schemes.split(","):
            label = f"tabula {scheme:<9}"
            if a.board == "none":
                s, _ = scheme_args(scheme, 0.0)
                if scheme != s:
                    print(f"  {label} skipped: a budget or target needs a build (--board)")
                    continue
                q = tabula.quantize(model, x1, [(torch.from_numpy(big["x"][i : i + 1]),) for i in cal], scheme=s)
                y = tabula.lower(q, x1).run(xt)[0]
                print(f"  {label} SQNR {sqnr_db(yt, y):6.2f} dB  top-1 = float {100 * top1(y, yt):5.1f} %", flush=True)
                continue
            try:
                s, extra = scheme_args(scheme, int8_est)
            except ValueError as e:
                print(f"  {label} skipped: {e}", flush=True)
                continue
            tag = scheme[len(s):].replace("@", "b").replace(":", "t")
            r = build_and_run(a.board, build_dir, f"{name}-split{tag}", files, s, extra)
            if "skip" in r:
                print(f"  {label} skipped: {r['skip']}", flush=True)
                continue
            y = tabula.load(r["dir"]).run(xt)[0]
            instr = r["instructions_per_inference"]
            if s == "int8":
                int8_instr = instr
            chosen = ""
            if s == "mixed":
                pj = json.loads((r["dir"] / "precision.json").read_text())
                int8_est = pj["instructions_int8"]
                layers = [la["label"] for la in pj["layers"] if la["scheme"] == "a16w8"]
                chosen = f"  int16: {len(layers)} of {len(pj['layers'])} ({', '.join(layers)})"
            ratio = f" ({instr / int8_instr:4.2f}x int8)" if int8_instr and instr else ""
            print(f"  {label} SQNR {sqnr_db(yt, y):6.2f} dB  top-1 = float {100 * top1(y, yt):5.1f} %  "
                  f"{instr:>11,} instr{ratio}  arena {r['arena_bytes']:>7,} B  mism {r['bit_exact_mismatches']}"
                  + chosen, flush=True)
        peer = bench.tflite_int8(name, big["x_tflite"][test], False)
        print(f"  TFLite int8      SQNR {sqnr_db(yt, peer):6.2f} dB  top-1 = float {100 * top1(peer, yt):5.1f} %",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
