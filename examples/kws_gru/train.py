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

import mlperf_tiny  # noqa: E402


class KwsGRU(nn.Module):
    """``[N, 49, 10]`` MFCC frames -> ``[N, 12]`` keyword logits (a GRU, a linear on the last step)."""

    def __init__(self, hidden: int = 32, classes: int = 12):
        super().__init__()
        self.gru = nn.GRU(10, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.fc(y[:, -1])


def frames(x_nchw: np.ndarray) -> np.ndarray:
    """The kws example's ``[N, 1, 49, 10]`` inputs as sequences ``[N, 49, 10]``."""
    return np.ascontiguousarray(x_nchw[:, 0])


def augment(x: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` variants of the windows ``x`` ``[k, 49, 10]``: a time shift (edges repeated), a scale, noise."""
    src = x[rng.integers(0, len(x), n)]
    shift = rng.integers(-8, 9, n)
    idx = np.clip(np.arange(49)[None, :] - shift[:, None], 0, 48)
    out = np.take_along_axis(src, idx[:, :, None], axis=1)
    out = out * rng.uniform(0.8, 1.25, (n, 1, 1)) + rng.standard_normal(out.shape) * 0.3 * x.std(axis=(0, 1))
    return out.astype(np.float32)


def teacher_logp(x: np.ndarray) -> np.ndarray:
    """The DS-CNN's log probabilities on sequences ``x`` ``[n, 49, 10]``."""
    dscnn = mlperf_tiny.load_model("kws")
    with torch.no_grad():
        p = dscnn(torch.from_numpy(x[:, None]))
    return torch.log(p.clamp_min(1e-7)).numpy()


def train(epochs: int = 12, n: int = 4096, seed: int = 0) -> tuple[KwsGRU, np.ndarray, np.ndarray, np.ndarray]:
    """The distilled GRU and (calibration x, test x, test labels = the DS-CNN's class)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    base = frames(mlperf_tiny.load_inputs("kws")["x"])
    x = augment(base, n, rng)
    t = torch.from_numpy(teacher_logp(x))
    model = KwsGRU()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xs = torch.from_numpy(x)
    for _ in range(epochs):
        for i in torch.randperm(n).split(128):
            loss = nn.functional.kl_div(torch.log_softmax(model(xs[i]), 1), t[i], log_target=True, reduction="batchmean")
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    test_rng = np.random.default_rng(seed + 1)
    calib, test = augment(base, 64, test_rng), augment(base, 64, test_rng)
    return model, calib, test, teacher_logp(test).argmax(1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        model, calib, test, y = train()
    except (FileNotFoundError, ImportError, ValueError) as e:
        print(f"tabula: error: {e}", file=sys.stderr)
        return 2
    with torch.no_grad():
        agree = float((model(torch.from_numpy(test)).argmax(1).numpy() == y).mean())
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    ep = torch.export.export(model, (torch.from_numpy(calib[:1]),))
    tmp = out / "model.tmp.pt2"
    torch.export.save(ep, tmp)
    tmp.replace(out / "model.pt2")
    np.savez(out / "calib.npz", x=calib)
    np.savez(out / "test.npz", x=test, y=y)
    print(f"kws_gru: GRU(10, 32) over 49 MFCC frames, distilled from the DS-CNN; top-1 agreement with it "
          f"{agree:.3f} on {len(test)} test windows -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
