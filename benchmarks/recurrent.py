"""Recurrent layers (nn.LSTM / nn.GRU unrolled, issue 21): output SQNR (dB) vs float of the lowered
integer program, int8 and a16w8, over 20-100 steps.

Models (tests/fixtures/recurrent_models.py): ``nn.LSTM(16, 32)`` + linear on the last step, and
``nn.GRU(16, 32, num_layers=2)`` + linear, PyTorch's random init ("short": the state forgets within a
few steps) and with the forget gate's bias +2 ("long": f / z about 0.9, the state carries over ~10
steps, where a drifting cell state would show).  Inputs: a multichannel sinusoid-plus-noise signal,
256 calibration sequences (min/max grids, ``observer="minmax"``) and 32 other test sequences: with 32
calibration sequences one test sequence reached beyond a calibrated grid and decided the figure (28 dB
at 20 steps in both schemes), which measures the calibration set, not the layers.  Also printed: PT2E's own float simulation of the same
quantized graph (the program should match it), IR ops and constant bytes (stored once: constant in T).

Usage: ``python benchmarks/recurrent.py [--steps 20 50 100] [--kinds lstm gru]`` (about 10 minutes on
one core for the full table).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "tests" / "fixtures")]

import tabula  # noqa: E402
from recurrent_models import make, signal  # noqa: E402
from tabula.report import sqnr_db  # noqa: E402


def measure(kind: str, steps: int, scheme: str, memory: bool, n_calib: int = 256, n: int = 32) -> dict:
    m = make(kind, memory=memory)
    x = torch.from_numpy(signal(n_calib + n, steps, seed=1))
    calib, test = x[:n_calib], x[n_calib:]
    t0 = time.monotonic()
    gm = tabula.quantize(m, (calib[:1],), calib, scheme=scheme, observer="minmax")
    program = tabula.lower(gm)
    with torch.no_grad():
        ref = m(test).numpy()
        sim = np.concatenate([gm(test[i : i + 1]).numpy() for i in range(n)])
    got = program.run(test.numpy())[0]
    g = program.graph
    return {"sqnr": sqnr_db(ref, got), "sim": sqnr_db(ref, sim), "ops": len(g.ops),
            "const": sum(v.nbytes for v in g.constants.values()), "s": time.monotonic() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[20, 50, 100])
    ap.add_argument("--kinds", nargs="+", default=["lstm", "gru"])
    ap.add_argument("--memory", nargs="+", default=["long", "short"])
    a = ap.parse_args(argv)
    print("| model | state | steps | int8 dB (PT2E sim) | a16w8 dB (PT2E sim) | IR ops int8 / a16w8 | constant bytes int8 / a16w8 |")
    print("|---|---|---|---|---|---|---|")
    for kind in a.kinds:
        for mem in a.memory:
            for steps in a.steps:
                r8 = measure(kind, steps, "int8", mem == "long")
                r16 = measure(kind, steps, "a16w8", mem == "long")
                print(f"| {kind} | {mem} | {steps} | {r8['sqnr']:.1f} ({r8['sim']:.1f}) | {r16['sqnr']:.1f} ({r16['sim']:.1f}) | "
                      f"{r8['ops']} / {r16['ops']} | {r8['const']} / {r16['const']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
