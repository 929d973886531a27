"""Write one MLPerf Tiny example's artifacts for ``scons example=kws|ic|ad`` (SCons runs this; it caches them).

    python examples/mlperf_tiny/export.py --model ad --out build/examples/ad

Writes into ``--out``:

* ``model.pt2``  -- the float PyTorch port (weights from the float ``.tflite``) as a ``torch.export``
  ExportedProgram with a batch-1 input (kws ``[1, 1, 49, 10]``, ic ``[1, 3, 32, 32]``, ad ``[1, 640]``);
* ``calib.npz``  -- ``x``: the calibration split of the shipped inputs (even indices), PyTorch layout;
* ``test.npz``   -- ``x``: the test split (odd indices), ``y_float``: the shipped float outputs of those
  samples (the reference for SQNR), ``index``: their indices in the shipped file.  No labels ``y``:
  the shipped inputs have none;
* ``all.npz``    -- the same for every shipped input (calibration and test samples together), for
  ``scons example=<model> samples=all``.

The port's outputs are checked against ``y_float`` first (max abs difference <= 1e-4 of the output
range); a port that drifted stops the build with one line.
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

import mlperf_tiny  # noqa: E402

#: The largest difference between the port and ``y_float`` accepted, relative to the output range.
PORT_TOLERANCE = 1e-4


def port_error(model: torch.nn.Module, x: np.ndarray, y_float: np.ndarray) -> float:
    """Max |port(x) - y_float| relative to the range of ``y_float`` (x in PyTorch layout)."""
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    return float(np.abs(y - y_float).max() / (y_float.max() - y_float.min()))


def export(name: str, out: Path) -> str:
    """Write ``model.pt2``, ``calib.npz``, ``test.npz``, ``all.npz`` for model ``name`` into ``out``; returns a
    summary line."""
    model = mlperf_tiny.load_model(name)
    d = mlperf_tiny.load_inputs(name)
    x, y_float = d["x"], d["y_float"]
    err = port_error(model, x, y_float)
    if err > PORT_TOLERANCE:
        raise ValueError(f"the {name} port differs from y_float by {err:.3g} of the output range (> {PORT_TOLERANCE})")
    calib, test = mlperf_tiny.split(len(x))
    out.mkdir(parents=True, exist_ok=True)
    ep = torch.export.export(model, (torch.from_numpy(x[:1]),))
    tmp = out / "model.tmp.pt2"
    torch.export.save(ep, tmp)
    tmp.replace(out / "model.pt2")
    np.savez(out / "calib.npz", x=x[calib], index=calib)
    np.savez(out / "test.npz", x=x[test], y_float=y_float[test], index=test)
    np.savez(out / "all.npz", x=x, y_float=y_float, index=np.arange(len(x)))
    return (f"{name}: {mlperf_tiny.SPECS[name].title}; port vs y_float {err:.2g} of the range; "
            f"{len(calib)} calibration / {len(test)} test samples -> {out}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=sorted(mlperf_tiny.SPECS))
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        print(export(a.model, Path(a.out)))
    except (FileNotFoundError, ImportError, ValueError) as e:
        print(f"tabula: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
