"""Write the MobileNet example (``scons example=mobilenet``): ``model.pt2`` (the network of :mod:`model`,
exported with a batch-1 input), ``calib.npz`` (``x``: 32 images) and ``test.npz`` (``x``: 16 other images;
no labels: the weights are random) into ``--out``.  Seeded: the same files every run."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model import build, images  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = build()
    calib, test = images(32, 2).numpy(), images(16, 3).numpy()
    torch.export.save(torch.export.export(model, (torch.from_numpy(calib[:1]),)), str(out / "model.pt2"))
    np.savez(out / "calib.npz", x=calib)
    np.savez(out / "test.npz", x=test)
    print(f"mobilenet: {out / 'model.pt2'}, calib.npz ({len(calib)}), test.npz ({len(test)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
