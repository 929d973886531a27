"""Instructions per MAC of CONV2D and FULLY_CONNECTED on the emulated Cortex-M55: Helium vs portable C.

The layers of issue 11 (int8): conv 3x3 16->32 on 16x16 with padding 1 (1,179,648 MACs), conv 1x1
32->64 on 16x16 (524,288), fully connected 256->128 (32,768), each exported from PyTorch as a
single-layer model and built with ``scons board=corstone300`` (``portable=0`` and ``portable=1``), run
on QEMU with ``-icount shift=0`` (``instructions_per_inference`` in ``results.json``; every run
bit-exact).  The figure is the whole inference (the layer with its fused requantization) per MAC, as
the issue's table.  Usage: ``python benchmarks/conv_helium.py [conv3x3|conv1x1|fc ...]`` (about a
minute per layer).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]

import torch.nn as nn  # noqa: E402

from _bench import fixture, scons  # noqa: E402

export = fixture("fixtures/conv_family_model.py").export

#: name -> (module, input shape without batch, MACs, CMSIS-NN M55 instr/MAC, issue 11 target)
LAYERS = {
    "conv3x3": (lambda: nn.Conv2d(16, 32, 3, padding=1), (16, 16, 16), 9 * 16 * 32 * 16 * 16, 0.334, 0.27),
    "conv1x1": (lambda: nn.Conv2d(32, 64, 1), (32, 16, 16), 32 * 64 * 16 * 16, 0.615, 0.50),
    "fc": (lambda: nn.Linear(256, 128), (256,), 256 * 128, 0.522, 0.42),
}


def measure(name: str, work: Path) -> dict:
    """``{portable: (instructions per inference, bit-exact mismatches)}``."""
    make, shape, _, _, _ = LAYERS[name]
    export(make(), shape, work, name, n_calib=8, n_test=2)
    out = {}
    for portable in (0, 1):
        scons("board=corstone300", "scheme=int8", f"build_dir={work / 'b'}", f"model={work / f'{name}.pt2'}",
              f"calib={work / 'calib.npz'}", f"data={work / 'test.npz'}", f"portable={portable}")
        r = json.loads((work / "b" / "corstone300" / (name + ("-portable" if portable else "")) / "results.json").read_text())
        out[portable] = (r["instructions_per_inference"], r["bit_exact_mismatches"])
    return out


def main() -> None:
    for name in sys.argv[1:] or list(LAYERS):
        with tempfile.TemporaryDirectory() as tmp:
            m = measure(name, Path(tmp))
        macs, cmsis, target = LAYERS[name][2:]
        for portable, label in ((0, "Helium"), (1, "portable")):
            total, bad = m[portable]
            print(f"int8 {label:8s} {name:8s}: {total:,} instructions per inference, {total / macs:.3f} per MAC "
                  f"(CMSIS-NN MVE {cmsis}, target {target}), mismatches {bad}", flush=True)


if __name__ == "__main__":
    main()
