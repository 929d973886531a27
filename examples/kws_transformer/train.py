"""A small transformer keyword spotter on the MFCC frames of the MLPerf Tiny keyword windows, for
``scons example=kws_transformer``.

    python examples/kws_transformer/train.py --out DIR     # writes model.pt2, calib.npz, test.npz

The model (:class:`KwsTransformer`): each of the 49 MFCC frames of a one-second window (``[1, 49, 10]``)
embedded by a linear to 32 features plus a learned position embedding, one
``nn.TransformerEncoderLayer(32, 2 heads, 64, batch_first=True)`` (self-attention over all 49 frames,
layer norms, a ReLU feed-forward), the mean over the frames and a linear to 12 keyword logits.  Like
``examples/kws_gru`` it is distilled from the MLPerf Tiny DS-CNN (:mod:`mlperf_tiny.distill`): its figure
is top-1 agreement with the DS-CNN, not a keyword accuracy.  Calibration: 64 augmented windows; test: 64
others with the DS-CNN's class as the label ``y``.  Seeded: the same files every run.
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


class KwsTransformer(nn.Module):
    """``[N, 49, 10]`` MFCC frames -> ``[N, 12]`` keyword logits (embedding, one encoder layer, mean, linear)."""

    def __init__(self, dim: int = 32, heads: int = 2, ff: int = 64, frames: int = 49, classes: int = 12):
        super().__init__()
        self.embed = nn.Linear(10, dim)
        self.pos = nn.Parameter(torch.randn(1, frames, dim) * 0.1)
        self.encoder = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, batch_first=True)
        self.fc = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(self.embed(x) + self.pos)
        return self.fc(h.mean(dim=1))


def train(epochs: int = 12, n: int = 4096, seed: int = 0) -> tuple[KwsTransformer, np.ndarray, np.ndarray, np.ndarray]:
    """The distilled transformer and (calibration x, test x, test labels = the DS-CNN's class)."""
    return distill(KwsTransformer, epochs, n, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        model, calib, test, y = train()
    except (FileNotFoundError, ImportError, ValueError) as e:
        print(f"tabula: error: {e}", file=sys.stderr)
        return 2
    agree = write_example(Path(a.out), model, calib, test, y)
    print(f"kws_transformer: one encoder layer (32 features, 2 heads) over 49 MFCC frames, distilled from the "
          f"DS-CNN; top-1 agreement with it {agree:.3f} on {len(test)} test windows -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
