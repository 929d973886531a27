"""Write the digits example's artifacts: the shipped trained model (or a new training) and the data split.

Writes into ``--out`` (default ``build/examples/digits``):

* ``model.pt2``  -- the trained float model as a ``torch.export`` ExportedProgram, input ``[1, 1, 8, 8]``;
* ``calib.npz``  -- ``x``: float32 ``[n, 1, 8, 8]`` calibration images (the training split);
* ``test.npz``   -- ``x``: float32 ``[n, 1, 8, 8]`` test images, ``y``: int64 labels.

Data: scikit-learn's bundled 8x8 digits (``sklearn/datasets/data/digits.csv.gz``, what
``sklearn.datasets.load_digits`` reads; no download), pixels / 16, and the fixed 80/20 stratified split of
``train_test_split(random_state=0, stratify=y)``, whose indices ship as ``split.npz``.  Training: Adam,
60 epochs, batch 64, seed 0 (about 10 s of CPU on one thread).  Its result ships too (``model.pt2`` beside
this file, 1,978 float32 parameters, float test accuracy 0.9778), so a build copies it and writes the data
without importing torch or scikit-learn; ``--retrain`` trains instead, and ``--retrain --save`` rewrites
the shipped ``model.pt2`` and ``split.npz``.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
SEED = 0
#: The shipped result of :func:`train` (60 epochs) and the test indices of the split.
SHIPPED_MODEL = HERE / "model.pt2"
SPLIT = HERE / "split.npz"


def load_digits_csv() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits, read from its CSV without importing scikit-learn: ``x`` float32 NCHW
    ``[1797, 1, 8, 8]`` in [0, 1] (pixels / 16), ``y`` int64 ``[1797]``.

    Raises:
        FileNotFoundError: scikit-learn is not installed (``pip install scikit-learn``).
    """
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the digits example reads scikit-learn's bundled digits: pip install scikit-learn")
    data = np.loadtxt(Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz", delimiter=",")
    x = (data[:, :-1].reshape(-1, 8, 8).astype(np.float32) / 16.0)[:, None, :, :]
    return x, data[:, -1].astype(np.int64)


def split_indices(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` indices of ``train_test_split(test_size=0.2, random_state=SEED, stratify=y)``, each in
    the order that split returns them (the calibration order matters to a histogram observer)."""
    from sklearn.model_selection import train_test_split

    train_idx, test_idx = train_test_split(np.arange(len(y)), test_size=0.2, random_state=SEED, stratify=y)
    return np.asarray(train_idx, dtype=np.int64), np.asarray(test_idx, dtype=np.int64)


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(x_train, x_test, y_train, y_test)``; x float32 NCHW [n,1,8,8] in [0,1], y int64: the split of
    :func:`split_indices`, read from the shipped ``split.npz`` (computed with scikit-learn when it is absent)."""
    x, y = load_digits_csv()
    if SPLIT.is_file():
        with np.load(SPLIT) as f:
            train_idx, test_idx = f["train"].astype(np.int64), f["test"].astype(np.int64)
    else:
        train_idx, test_idx = split_indices(y)
    return x[train_idx], x[test_idx], y[train_idx], y[test_idx]


def train(epochs: int = 60):
    """Train with a fixed seed; returns the model (``DigitsCNN``, eval mode), its test accuracy and the split."""
    import torch

    sys.path.insert(0, str(HERE))
    from model import DigitsCNN

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
    ap.add_argument("--out", default="build/examples/digits",
                    help="folder for model.pt2, calib.npz, test.npz (default: %(default)s)")
    ap.add_argument("--retrain", action="store_true", help="train instead of copying the shipped model.pt2")
    ap.add_argument("--epochs", type=int, default=None,
                    help="with --retrain: epochs to train (default 60, what the shipped model was trained with)")
    ap.add_argument("--save", action="store_true", help="with --retrain: write the result over the shipped "
                                                        "model.pt2 and split.npz")
    args = ap.parse_args(argv)
    if not args.retrain and (args.epochs is not None or args.save):
        ap.error("--epochs and --save go with --retrain (without it the shipped trained model is copied)")
    if args.epochs is not None and args.epochs < 1:
        ap.error(f"--epochs {args.epochs}: train at least 1 epoch")
    args.epochs = 60 if args.epochs is None else args.epochs
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "model.tmp.pt2"
    if args.retrain or not SHIPPED_MODEL.is_file():
        import torch

        model, acc, (x_tr, x_te, y_tr, y_te) = train(args.epochs)
        torch.export.save(torch.export.export(model, (torch.from_numpy(x_te[:1]),)), tmp)
        if args.save:
            shutil.copyfile(tmp, SHIPPED_MODEL)
            train_idx, test_idx = split_indices(load_digits_csv()[1])
            np.savez_compressed(SPLIT, train=train_idx.astype(np.int16), test=test_idx.astype(np.int16))
        note = f"float test accuracy {acc:.4f}"
    else:
        x_tr, x_te, y_tr, y_te = load_split()
        shutil.copyfile(SHIPPED_MODEL, tmp)
        note = f"the shipped trained model ({SHIPPED_MODEL.name}; --retrain trains it again)"
    tmp.replace(out / "model.pt2")
    np.savez(out / "calib.npz", x=x_tr)
    np.savez(out / "test.npz", x=x_te, y=y_te)
    print(f"digits: {note}, {len(y_te)} test images -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
