"""Issue 24 on a *trained* MobileNet of tabula's own: int8, a16w8 and scheme=mixed built and run on a board.

    python benchmarks/mixed_mobilenet.py                      # corstone300 (QEMU's Cortex-M55)
    python benchmarks/mixed_mobilenet.py --schemes int8,mixed --epochs 2 --calib 64

The network is ``examples/mobilenet``'s MobileNetV1 (alpha 0.25, 96x96x1, two classes, softmax: the MLPerf Tiny
person-detection shape, 7.5 M MACs), trained here (seeded, one thread, about 2 minutes) on a synthetic detection
task: a smooth random background (``examples/mobilenet/model.py`` ``images``, halved) with, in half the images, a
faint elliptic figure (+``--contrast``, random place and size) to detect.  ``example=mobilenet``'s random weights
make a network whose int8 weights alone cost it most of its SQNR (5.7 dB); a trained one is what a user deploys.
Calibration: 256 images (``--calib``; the mixed scheme simulates the first 128 of them), test: 128 others
(``--test``; none both).  With 64 calibration images the mixed scheme's choice rests on 64 x 2 logits: single
layers then move the simulated SQNR by +-0.8 dB either way, and the choice is partly luck.  Each scheme is built like a user's model (``scons
board=<board> model=... calib=... data=... scheme=<s>``) and every test image runs on the board: SQNR (dB) of the
probabilities and top-1 agreement against the float model, instructions per inference (QEMU ``-icount shift=0``),
arena and ``mism`` (outputs differing from the Python integer reference; 0: bit-exact), and for mixed the int16
layers it chose.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402

_spec = importlib.util.spec_from_file_location("_larger_split", Path(__file__).with_name("larger_split.py"))
split = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(split)
_mspec = importlib.util.spec_from_file_location("_mobilenet_model", ROOT / "examples" / "mobilenet" / "model.py")
mobilenet = importlib.util.module_from_spec(_mspec)
_mspec.loader.exec_module(mobilenet)


def data(n: int, seed: int, contrast: float):
    """``n`` images float32 NCHW [n, 1, 96, 96] in [-1, 1] and labels int64 [n] (1: a figure is there)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = mobilenet.images(n, seed) * 0.5
    y = torch.randint(0, 2, (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(96.0), torch.arange(96.0), indexing="ij")
    for i in range(n):
        if y[i]:
            cy, cx = (torch.randint(16, 80, (2,), generator=g)).float()
            ry, rx = 6 + 12 * torch.rand(2, generator=g)
            x[i, 0][(((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2) < 1] += contrast
    return x.clamp(-1, 1), y


def train(epochs: int, contrast: float, n: int = 2000):
    """The trained network (eval mode) and its float test accuracy on 512 fresh images."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = mobilenet.MobileNetV1()
    x, y = data(n, 1, contrast)
    opt = torch.optim.Adam(m.parameters(), lr=2e-3)

    def logits(t):
        return m.fc(torch.flatten(m.pool(m.features(t)), 1))

    for _ in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, 32):
            idx = perm[i : i + 32]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(logits(x[idx]), y[idx]).backward()
            opt.step()
    m.eval()
    xt, yt = data(512, 2, contrast)
    with torch.no_grad():
        acc = float((logits(xt).argmax(1) == yt).float().mean())
    return m, acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemes", default="int8,a16w8,mixed", help="comma-separated of int8, a16w8, mixed (default: all)")
    ap.add_argument("--board", default="corstone300", help="the board to build and run on (default corstone300)")
    ap.add_argument("--epochs", type=int, default=3, help="training epochs (default 3)")
    ap.add_argument("--contrast", type=float, default=0.3, help="the figure's brightness over the background (default 0.3)")
    ap.add_argument("--calib", type=int, default=256, help="calibration images")
    ap.add_argument("--test", type=int, default=128, help="test images, each run on the board")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "mixed_mobilenet"))
    a = ap.parse_args(argv)
    if a.calib < 1 or a.test < 1:
        ap.error("--calib and --test need at least one image each")
    if a.epochs < 1 or not 0 < a.contrast <= 2:
        ap.error("--epochs needs at least 1 and --contrast a value in (0, 2]")
    bad = [s for s in a.schemes.split(",") if s not in ("int8", "a16w8", "mixed")]
    if bad:
        ap.error(f"--schemes: unknown {', '.join(bad)}; choose from int8, a16w8, mixed")
    from tabula.boards import load_board

    try:
        load_board(a.board)
    except ValueError as e:
        ap.error(f"--board: {e}")
    import torch

    import tabula
    from tabula.report import sqnr_db

    build_dir = Path(a.build_dir).resolve()
    d = build_dir / "data"
    d.mkdir(parents=True, exist_ok=True)
    model, acc = train(a.epochs, a.contrast)
    xc, _ = data(a.calib, 3, a.contrast)
    xt, _ = data(a.test, 4, a.contrast)
    with torch.no_grad():
        yt = torch.cat([model(xt[i : i + 1]) for i in range(len(xt))]).numpy()
    files = {"model": d / "model.pt2", "calib": d / "calib.npz", "test": d / "test.npz"}
    torch.export.save(torch.export.export(model, (xc[:1],)), str(files["model"]))
    np.savez(files["calib"], x=xc.numpy())
    np.savez(files["test"], x=xt.numpy())
    print(f"MobileNetV1 0.25 96x96, trained {a.epochs} epochs (contrast {a.contrast}): float test accuracy "
          f"{100 * acc:.1f} %, mean top probability {yt.max(1).mean():.3f}; calibrated on {a.calib} images, tested on {a.test}, "
          f"built for {a.board}", flush=True)
    int8_instr = None
    for scheme in a.schemes.split(","):
        r = split.build_and_run(a.board, build_dir, "mobilenet-trained", files, scheme, [])
        if "skip" in r:
            print(f"  tabula {scheme:<6} skipped: {r['skip']}", flush=True)
            continue
        y = tabula.load(r["dir"]).run(xt.numpy())[0]
        instr = r["instructions_per_inference"]
        int8_instr = instr if scheme == "int8" else int8_instr
        chosen = ""
        if scheme == "mixed":
            import json

            pj = json.loads((r["dir"] / "precision.json").read_text())
            names = [la["label"] for la in pj["layers"] if la["scheme"] == "a16w8"]
            chosen = f"  int16: {len(names)} of {len(pj['layers'])} ({', '.join(names)})"
        ratio = f" ({instr / int8_instr:4.2f}x int8)" if int8_instr and instr else ""
        print(f"  tabula {scheme:<6} SQNR {sqnr_db(yt, y):6.2f} dB  top-1 = float {100 * split.top1(y, yt):5.1f} %  "
              f"{instr:>11,} instr{ratio}  arena {r['arena_bytes']:>7,} B  mism {r['bit_exact_mismatches']}" + chosen,
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
