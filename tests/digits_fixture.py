"""Session-wide artifacts of the digits example (written once per test session, in a tmp dir: the shipped trained
model and the data split, examples/digits/train.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def train_digits(out: Path) -> Path:
    """Run examples/digits/train.py into ``out``; returns ``out`` (model.pt2, calib.npz, test.npz)."""
    subprocess.run([sys.executable, str(ROOT / "examples/digits/train.py"), "--out", str(out)], check=True,
                   capture_output=True)
    return out


def load_digits_artifacts(d: Path):
    import torch

    ep = torch.export.load(str(d / "model.pt2"))
    calib = torch.from_numpy(np.load(d / "calib.npz")["x"])
    test = np.load(d / "test.npz")
    return ep, calib, test["x"], test["y"]
