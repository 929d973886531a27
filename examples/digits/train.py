"""Train the digits example and write its artifacts (run once; SCons caches the results).

Writes into ``--out`` (default ``build/examples/digits``):

* ``model.pt2``  -- the trained float model as a ``torch.export`` ExportedProgram, input ``[1, 1, 8, 8]``;
* ``calib.npz``  -- ``x``: float32 ``[n, 1, 8, 8]`` calibration images (the training split);
* ``test.npz``   -- ``x``: float32 ``[n, 1, 8, 8]`` test images, ``y``: int64 labels.

Data: ``sklearn.datasets.load_digits`` (bundled with scikit-learn, no download), pixels / 16, fixed
seed 0 and a fixed 80/20 stratified split.  Training: Adam, 60 epochs, batch 64 (< 30 s on one thread).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model import DigitsCNN  # noqa: E402

SEED = 0


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(x_train, y_train, x_test, y_test)``; x float32 NCHW [n,1,8,8] in [0,1], y int64."""
    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=SEED, stratify=y)


def train(epochs: int = 60) -> tuple[DigitsCNN, float, tuple]:
    """Train with a fixed seed; returns the model (eval mode), its test accuracy and the split."""
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    x_tr, x_te, y_tr, y_te = load_split()
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = float((model(torch.from_numpy(x_te)).argmax(1).numpy() == y_te).mean())
    return model, acc, (x_tr, x_te, y_tr, y_te)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/examples/digits")
    ap.add_argument("--epochs", type=int, default=60)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, acc, (x_tr, x_te, y_tr, y_te) = train(args.epochs)
    ep = torch.export.export(model, (torch.from_numpy(x_te[:1]),))
    tmp = out / "model.tmp.pt2"
    torch.export.save(ep, tmp)
    tmp.replace(out / "model.pt2")
    np.savez(out / "calib.npz", x=x_tr)
    np.savez(out / "test.npz", x=x_te, y=y_te)
    print(f"digits: float test accuracy {acc:.4f} on {len(y_te)} images -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
