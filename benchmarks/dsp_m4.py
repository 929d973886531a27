"""Instructions per MAC of CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED int8 on the emulated Cortex-M4
(QEMU ``mps2-an386``): the DSP path (SMLAD / SXTB16) vs the portable C (``portable=1``).

Each layer is exported from PyTorch alone and built with ``scons board=mps2_an386`` (``portable=0``
and ``portable=1``), run on QEMU with ``-icount shift=0`` (``instructions_per_inference`` in
``results.json``; every run must be bit-exact).  Two figures per layer: the whole inference / MACs
(the layer with its fused requantization, as a TFLite Micro ``Invoke()`` of the one layer measures
CMSIS-NN) and the kernel's share, the layer minus a smaller twin (3x3 minus 1x1 kernel; 1x1 and FC
minus half the input channels), so the per-pixel set-up and the epilogue cancel.
Usage: ``python benchmarks/dsp_m4.py [conv3x3 conv1x1 dw3x3 fc] [--portable-only|--dsp-only]``.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]

from torch import nn  # noqa: E402

from _bench import fixture, scons  # noqa: E402

export = fixture("fixtures/conv_family_model.py").export

BOARD = "mps2_an386"
CMSIS_NN_M4 = {"conv3x3": 2.14, "conv1x1": 2.70, "dw3x3": 7.96, "fc": 2.07}


def layers():
    """name -> (model, twin, input shape, MACs of the layer, MACs of the layer minus its twin)."""
    hw = 16 * 16
    return {
        "conv3x3": (nn.Conv2d(16, 32, 3, padding=1), nn.Conv2d(16, 32, 1), (16, 16, 16),
                    9 * 16 * 32 * hw, 8 * 16 * 32 * hw),
        "conv1x1": (nn.Conv2d(32, 64, 1), nn.Conv2d(16, 64, 1), (32, 16, 16), 32 * 64 * hw, 16 * 64 * hw),
        "dw3x3": (nn.Conv2d(64, 64, 3, padding=1, groups=64), nn.Conv2d(64, 64, 1, groups=64), (64, 16, 16),
                  9 * 64 * hw, 8 * 64 * hw),
        "fc": (nn.Linear(256, 128), nn.Linear(128, 128), (256,), 256 * 128, 128 * 128),
    }


def run(model, shape, work: Path, name: str, portable: int) -> tuple[int, int]:
    work.mkdir(parents=True, exist_ok=True)
    if not (work / f"{name}.pt2").exists():
        export(model, shape, work, name, n_calib=8, n_test=2)
    scons(f"board={BOARD}", f"build_dir={work / 'b'}", f"model={work / f'{name}.pt2'}", f"calib={work / 'calib.npz'}",
          f"data={work / 'test.npz'}", f"portable={portable}")
    r = json.loads((work / "b" / BOARD / (name + ("-portable" if portable else "")) / "results.json").read_text())
    return r["instructions_per_inference"], r["bit_exact_mismatches"]


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    modes = [1] if "--portable-only" in sys.argv else [0] if "--dsp-only" in sys.argv else [1, 0]
    table = layers()
    for key in args or list(table):
        model, twin, shape, macs, dmacs = table[key]
        twin_shape = (twin.in_channels,) + shape[1:] if isinstance(twin, nn.Conv2d) else (twin.in_features,)
        with tempfile.TemporaryDirectory() as tmp:
            for portable in modes:
                total, bad = run(model.eval(), shape, Path(tmp) / "a", key, portable)
                small, bad2 = run(twin.eval(), twin_shape, Path(tmp) / "b", key + "_twin", portable)
                label = "portable" if portable else "DSP"
                print(f"{key:8s} {label:8s} {total:>10,} instructions  {total / macs:5.2f} per MAC (layer), "
                      f"{(total - small) / dmacs:5.2f} (kernel share)  CMSIS-NN M4 {CMSIS_NN_M4[key]}  "
                      f"mismatches {bad + bad2}", flush=True)


if __name__ == "__main__":
    main()
