"""Issue 24: the MLPerf Tiny larger evaluation sets split in two -- calibrate on a documented part, test on the rest.

    python benchmarks/larger_split.py                       # kws and ic, int8 / a16w8 / mixed
    python benchmarks/larger_split.py --models ic --schemes int8

``kws_synth_a.npz`` (204 windows) and ``ic_crops_a.npz`` (203 crops) (mlperf_tiny's README): the even-indexed
samples calibrate (102 / 102: from 100 inputs on, ``observer="auto"`` takes the histogram grids), the odd-indexed
ones test (102 / 101), none doing both.  tabula's outputs are the Python integer reference's (``Program.run``;
the firmware equals it bit for bit, ``benchmarks/mlperf_tiny.py``), the peer is TFLite's int8 model
(ai-edge-litert) on the same test samples; both against the float model's ``y_float``: SQNR (dB) and top-1
agreement.  Prints one line per model and runtime.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="kws,ic")
    ap.add_argument("--schemes", default="int8,a16w8,mixed")
    a = ap.parse_args(argv)
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
        calib = [(torch.from_numpy(big["x"][i : i + 1]),) for i in cal]
        print(f"{name}: calibrated on the {len(cal)} even samples of {bench.LARGER[name]}, tested on its {len(test)} odd ones")
        for scheme in a.schemes.split(","):
            q = tabula.quantize(model, x1, calib, scheme=scheme)
            y = tabula.lower(q, x1).run(xt)[0]
            print(f"  tabula {scheme:<6} SQNR {sqnr_db(yt, y):6.2f} dB  top-1 = float {100 * top1(y, yt):5.1f} %", flush=True)
        peer = bench.tflite_int8(name, big["x_tflite"][test], False)
        print(f"  TFLite int8   SQNR {sqnr_db(yt, peer):6.2f} dB  top-1 = float {100 * top1(peer, yt):5.1f} %", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
