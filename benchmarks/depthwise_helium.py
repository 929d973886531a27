"""Instructions per MAC of DEPTHWISE_CONV2D on the emulated Cortex-M55: Helium path vs portable C.

The layer: depthwise 3x3, 64 channels, 16x16 input, padding 1 (147,456 MACs), exported from PyTorch
and built with ``scons board=corstone300`` (``portable=0`` and ``portable=1``), run on QEMU with
``-icount shift=0`` (``instructions_per_inference`` in ``results.json``; every run bit-exact).  The
kernel's share is the 3x3 layer minus the same layer with a 1x1 kernel (8 of its 9 taps), so the
RESCALE after it and the per-pixel set-up cancel.  Usage:
``python benchmarks/depthwise_helium.py [int8|a16w8]`` (about 3 minutes per scheme).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]

from _bench import fixture, scons  # noqa: E402

_family = fixture("fixtures/conv_family_model.py")
DepthwiseLayer, export = _family.DepthwiseLayer, _family.export

H = W = 16
C = 64


def measure(scheme: str, work: Path) -> dict:
    """``{(k, portable): (instructions per inference, bit-exact mismatches)}`` for k in (3, 1)."""
    out = {}
    for k in (3, 1):
        d = work / f"k{k}"
        d.mkdir(parents=True, exist_ok=True)
        export(DepthwiseLayer(k, C), (C, H, W), d, f"dw{k}", n_calib=8, n_test=2)
        for portable in (0, 1):
            scons("board=corstone300", f"scheme={scheme}", f"build_dir={d / 'b'}", f"model={d / f'dw{k}.pt2'}",
                  f"calib={d / 'calib.npz'}", f"data={d / 'test.npz'}", f"portable={portable}")
            name = f"dw{k}" + ("" if scheme == "int8" else f"-{scheme}") + ("-portable" if portable else "")
            r = json.loads((d / "b" / "corstone300" / name / "results.json").read_text())
            out[k, portable] = (r["instructions_per_inference"], r["bit_exact_mismatches"])
    return out


def main() -> None:
    schemes = sys.argv[1:] or ["int8", "a16w8"]
    macs = 9 * H * W * C
    for scheme in schemes:
        with tempfile.TemporaryDirectory() as tmp:
            m = measure(scheme, Path(tmp))
        for portable, label in ((0, "Helium"), (1, "portable")):
            total, bad = m[3, portable]
            kernel = (total - m[1, portable][0]) / (8 * H * W * C)
            print(f"{scheme:6s} {label:8s} depthwise 3x3 x{C} {H}x{W}: {total:,} instructions per inference "
                  f"({total / macs:.2f} per MAC with the RESCALE), kernel {kernel:.2f} per MAC, mismatches {bad}")


if __name__ == "__main__":
    main()
