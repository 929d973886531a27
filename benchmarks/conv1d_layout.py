"""A Conv1d stack against the same model written as Conv2d (k, 1): whole-model instructions on the M55.

Issue 22: a model written with ``nn.Conv1d`` spent 63 % of its instructions in TRANSPOSE pairs that cancel
(each 1-D conv converts ``[N, C, L]`` to its NHWC view and back) and clamped its ReLUs on a grid that spent
codes below zero; the layout pass (:mod:`tabula.lowering.simplify_layout_pass`) and the ReLU fused into
Conv1d (``rules.FUSING_PRODUCERS``) keep the stack in NHWC between convs.  Goal: the Conv1d model within
10 % of the Conv2d (k, 1) one.

The two models compute the same function with the same weights: input ``[1, 40, 28]`` (Conv2d: ``[1, 40,
28, 1]``), convs 40->128 k3, 128->128 k3, 128->128 k3, 128->64 k1 (padding 1 / 0), each + ReLU (or ReLU6:
``--act relu6``, a CLAMP that stays), flatten, linear -> 12.  Each is exported, built with ``scons
board=corstone300`` (QEMU mps3-an547, Cortex-M55, Helium) and run under ``-icount shift=0``
(``instructions_per_inference`` in ``results.json``; the device's outputs bit-exact with the Python reference:
``bit_exact_mismatches`` 0, else the script stops).  Also printed: the IR's TRANSPOSE / CLAMP ops and the
bytes its TRANSPOSEs write.

Usage: ``python benchmarks/conv1d_layout.py [--act relu|relu6] [--board corstone300]`` (about a minute).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from _bench import fixture, scons  # noqa: E402

export = fixture("fixtures/conv_family_model.py").export

#: (Cin, Cout, kernel, padding) of each conv.
LAYERS = [(40, 128, 3, 1), (128, 128, 3, 1), (128, 128, 3, 1), (128, 64, 1, 0)]
LENGTH = 28


class Conv1dStack(nn.Module):
    """The stack with ``nn.Conv1d`` on ``[N, C, L]``."""

    def __init__(self, act: str = "relu"):
        super().__init__()
        self.act = act
        self.convs = nn.ModuleList(nn.Conv1d(ci, co, k, padding=p) for ci, co, k, p in LAYERS)
        self.fc = nn.Linear(LAYERS[-1][1] * LENGTH, 12)

    def forward(self, x):
        for c in self.convs:
            x = F.relu6(c(x)) if self.act == "relu6" else torch.relu(c(x))
        return self.fc(x.flatten(1))


class Conv2dStack(nn.Module):
    """The same with ``nn.Conv2d`` kernel (k, 1) on ``[N, C, L, 1]`` (the weights of ``ref``)."""

    def __init__(self, ref: Conv1dStack):
        super().__init__()
        self.act = ref.act
        self.convs = nn.ModuleList(nn.Conv2d(ci, co, (k, 1), padding=(p, 0)) for ci, co, k, p in LAYERS)
        with torch.no_grad():
            for c2, c1 in zip(self.convs, ref.convs):
                c2.weight.copy_(c1.weight[..., None])
                c2.bias.copy_(c1.bias)
        self.fc = ref.fc

    def forward(self, x):
        for c in self.convs:
            x = F.relu6(c(x)) if self.act == "relu6" else torch.relu(c(x))
        return self.fc(x.flatten(1))


def measure(model: nn.Module, shape, name: str, board: str, work: Path) -> dict:
    """Build and run ``model`` on ``board``: instructions per inference, mismatches, the IR's layout figures."""
    sub = work / name
    sub.mkdir()
    export(model, shape, sub, name, n_calib=16, n_test=2)
    scons(f"board={board}", "scheme=int8", f"build_dir={work / 'b'}", f"model={sub / f'{name}.pt2'}",
          f"calib={sub / 'calib.npz'}", f"data={sub / 'test.npz'}")
    out = work / "b" / board / name
    r = json.loads((out / "results.json").read_text())
    if r["bit_exact_mismatches"]:
        raise SystemExit(f"{name}: {r['bit_exact_mismatches']} outputs differ from the Python reference")
    ir = json.loads((out / "ir.json").read_text()) if (out / "ir.json").is_file() else \
        json.loads(next(out.rglob("ir.json")).read_text())
    sizes = {t["name"]: t for t in ir["tensors"]}
    tbytes = 0
    for o in ir["ops"]:
        if o["op"] == "TRANSPOSE":
            t = sizes[o["outputs"][0]]
            n = 1
            for d in t["shape"]:
                n *= d
            tbytes += n * {"int8": 1, "int16": 2, "int32": 4}.get(t["dtype"], 8)
    return {"instructions": r["instructions_per_inference"], "transposes": sum(o["op"] == "TRANSPOSE" for o in ir["ops"]),
            "clamps": sum(o["op"] == "CLAMP" for o in ir["ops"]), "transpose_bytes": tbytes}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--act", default="relu", choices=["relu", "relu6"])
    ap.add_argument("--board", default="corstone300")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    m1 = Conv1dStack(a.act).eval()
    m2 = Conv2dStack(m1).eval()
    macs = sum(ci * co * k * LENGTH for ci, co, k, _ in LAYERS) + LAYERS[-1][1] * LENGTH * 12
    with tempfile.TemporaryDirectory(prefix="tabula-conv1d-") as tmp:
        r1 = measure(m1, (40, LENGTH), "conv1d_stack", a.board, Path(tmp))
        r2 = measure(m2, (40, LENGTH, 1), "conv2d_k1_stack", a.board, Path(tmp))
    print(f"Conv1d stack vs Conv2d (k, 1), {a.act}, {a.board}, QEMU -icount shift=0, {macs:,} MACs, both bit-exact")
    for label, r in (("Conv1d", r1), ("Conv2d (k, 1)", r2)):
        print(f"  {label:14s} {r['instructions']:>11,} instructions  {r['instructions'] / macs:.3f}/MAC  "
              f"TRANSPOSE {r['transposes']} ({r['transpose_bytes']:,} B)  CLAMP {r['clamps']}")
    ratio = r1["instructions"] / r2["instructions"]
    print(f"  Conv1d / Conv2d (k, 1) = {ratio:.3f} (goal <= 1.10: {'met' if ratio <= 1.10 else 'not met'})")


if __name__ == "__main__":
    main()
