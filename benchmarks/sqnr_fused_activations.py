"""SQNR (dB) vs float with and without activation fusion (relu/relu6/hardtanh/clamp taking over their
producer's output grid), and of the shared layer and pruned-row fixes.

Prints, for int8 and a16w8, the output SQNR of the lowered integer program against the float model:
  * digits example (conv-SiLU-pool-conv-tanh-pool-linear: nothing to fuse, so the two agree),
  * a conv-relu-conv-relu6-linear network (tests/quantizer/test_fused_activations.py::ConvNet), 3x8x8 inputs,
    fused (tabula's default) vs unfused (``TabulaQuantizer(fuse_activations=False)``: the activation
    shares the producer's full grid, the rule before), and for int8 the same network under torchao's
    XNNPACKQuantizer (ExecuTorch's XNNPACK rule set: conv+relu fused, per-channel weights) as the
    peer, measured on its own PT2E simulation (the converted graph run in float),
  * an 8-step unrolled linear+tanh cell with one shared Linear (tests/quantizer/test_shared_layers.py) and a
    linear with a pruned row (zero weights, bias 4.0): the lowered program vs PT2E's simulation.
Usage: ``python benchmarks/sqnr_fused_activations.py``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torchao.quantization.pt2e import move_exported_model_to_eval  # noqa: E402
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import tabula  # noqa: E402
from tabula.quantizer import capture  # noqa: E402
from tabula.quantizer.annotator import TabulaQuantizer  # noqa: E402
from tabula.report import sqnr_db  # noqa: E402
from _bench import fixture  # noqa: E402

ConvNet = fixture("quantizer/test_fused_activations.py").ConvNet
UnrolledCell = fixture("quantizer/test_shared_layers.py").UnrolledCell


def pt2e(model, example, calib, quantizer):
    gm = capture(model, example)
    prepared = prepare_pt2e(gm, quantizer)
    move_exported_model_to_eval(prepared)
    with torch.no_grad():
        for i in range(calib.shape[0]):
            prepared(calib[i : i + 1])
    gm = convert_pt2e(prepared)
    move_exported_model_to_eval(gm)
    return gm


def run_each(fn, x):
    with torch.no_grad():
        return np.concatenate([np.asarray(fn(x[i : i + 1])) for i in range(x.shape[0])])


def program_sqnr(model, gm, x):
    ref = run_each(lambda v: model(v).numpy(), x)
    return sqnr_db(ref, tabula.lower(gm).run(x.numpy())[0]), sqnr_db(ref, run_each(lambda v: gm(v).numpy(), x))


def convnet_rows():
    torch.manual_seed(0)
    model = ConvNet().eval()
    calib, test = torch.randn(200, 3, 8, 8), torch.randn(200, 3, 8, 8)
    rows = []
    for scheme in ("int8", "a16w8"):
        fused = program_sqnr(model, pt2e(model, (calib[:1],), calib, TabulaQuantizer(scheme)), test)[0]
        unfused = program_sqnr(model, pt2e(model, (calib[:1],), calib, TabulaQuantizer(scheme, fuse_activations=False)),
                               test)[0]
        rows.append((f"conv-relu-conv-relu6-linear {scheme}", unfused, fused))
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    xnn = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    gm = pt2e(model, (calib[:1],), calib, xnn)
    ref = run_each(lambda v: model(v).numpy(), test)
    peer = sqnr_db(ref, run_each(lambda v: gm(v).numpy(), test))
    return rows, peer


def digits_rows():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "examples/digits/train.py"), "--out", str(d)], check=True,
                       capture_output=True)
        ep = torch.export.load(str(d / "model.pt2"))
        calib = torch.from_numpy(np.load(d / "calib.npz")["x"][:400])
        test = torch.from_numpy(np.load(d / "test.npz")["x"])
        model = ep.module(check_guards=False)
        for scheme in ("int8", "a16w8"):
            fused = program_sqnr(model, pt2e(ep, (calib[:1],), calib, TabulaQuantizer(scheme)), test)[0]
            unfused = program_sqnr(model, pt2e(ep, (calib[:1],), calib, TabulaQuantizer(scheme, fuse_activations=False)),
                                   test)[0]
            rows.append((f"digits {scheme}", unfused, fused))
    return rows


def shared_and_pruned_rows():
    rows = []
    torch.manual_seed(0)
    cell = UnrolledCell().eval()
    with torch.no_grad():
        cell.cell.bias.mul_(4.0)
    x = torch.randn(64, 16) * 3
    torch.manual_seed(0)
    pruned = nn.Sequential(nn.Linear(8, 4)).eval()
    with torch.no_grad():
        pruned[0].weight[2] = 0.0
        pruned[0].bias[2] = 4.0
    xp = torch.randn(64, 8)
    for name, model, data in (("unrolled cell (8 calls)", cell, x), ("pruned row, bias 4.0", pruned, xp)):
        for scheme in ("int8", "a16w8"):
            gm = tabula.quantize(model, (data[:1],), data, scheme=scheme)
            prog, sim = program_sqnr(model, gm, data)
            rows.append((f"{name} {scheme}", prog, sim))
    return rows


def main() -> int:
    rows, peer = convnet_rows()
    rows = digits_rows() + rows
    print("output SQNR vs float (dB)                      unfused   fused (default)")
    for name, unfused, fused in rows:
        print(f"  {name:<44s} {unfused:7.2f}   {fused:7.2f}")
    print(f"  conv-relu-conv-relu6-linear int8, XNNPACKQuantizer (PT2E simulation): {peer:.2f}")
    print("\nlowered program vs PT2E's own simulation (dB)   program   simulation")
    for name, prog, sim in shared_and_pruned_rows():
        print(f"  {name:<44s} {prog:7.2f}   {sim:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
