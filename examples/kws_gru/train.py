"""A GRU keyword spotter on the MFCC frames of the MLPerf Tiny keyword windows, for ``scons example=kws_gru``.

    python examples/kws_gru/train.py --out DIR     # writes model.pt2, calib.npz, test.npz

The model (:class:`KwsGRU`): ``nn.GRU(10, 32)`` over the 49 MFCC frames of a one-second window (each frame's
10 coefficients a step, ``[1, 49, 10]``), a linear on the last step, 12 keyword logits.  There are no
labelled keyword recordings in this repository, so it is *distilled* from the MLPerf Tiny DS-CNN (the
float ``kws_ref_model_float32.tflite``, examples/mlperf_tiny): trained to match the DS-CNN's log
probabilities on the 15 shipped windows, each shifted in time (up to 8 frames either way, edges repeated),
scaled (0.8-1.25) and with noise (0.3 of the coefficients' spread), 4,096 variants a run.  Its figure is
top-1 agreement with the DS-CNN, not a keyword accuracy.  Calibration: 64 augmented windows; test: 64 other
augmented windows (another seed) with the DS-CNN's class as the label ``y``.  Seeded: the same files every run.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from mlperf_tiny.distill import distill, write_example  # noqa: E402


class KwsGRU(nn.Module):
    """``[N, 49, 10]`` MFCC frames -> ``[N, 12]`` keyword logits (a GRU, a linear on the last step)."""

    def __init__(self, hidden: int = 32, classes: int = 12):
        super().__init__()
        self.gru = nn.GRU(10, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


def train(epochs: int = 12, n: int = 4096, seed: int = 0) -> tuple[KwsGRU, np.ndarray, np.ndarray, np.ndarray]:
    """The distilled GRU and (calibration x, test x, test labels = the DS-CNN's class)."""
    return distill(KwsGRU, epochs, n, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        model, calib, test, y = train()
    except (FileNotFoundError, ImportError, ValueError) as e:
        print(f"tabula: error: {e}", file=sys.stderr)
        return 2
    out = Path(a.out)
    agree = write_example(out, model, calib, test, y)
    print(f"kws_gru: GRU(10, 32) over 49 MFCC frames, distilled from the DS-CNN; top-1 agreement with it "
          f"{agree:.3f} on {len(test)} test windows -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
