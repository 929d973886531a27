"""Fit the mixed scheme's cost model (:data:`tabula.quantizer.costs.COSTS`) to measured per-op instructions.

    python benchmarks/fit_costs.py                      # kws, ic, mobilenet; int8 and a16w8; corstone300 (M55)
    python benchmarks/fit_costs.py --board mps2_an386 --models kws,ic
    python benchmarks/fit_costs.py --reuse               # the profile builds already in --build-dir

Each (model, scheme) is built with ``profile=1`` (``scons board=<board> example=<model> scheme=<scheme>
profile=1 limit=2``), so the firmware reads the tick counter around every kernel call (QEMU ``-icount
shift=0``: instructions).  Every emitted op's instructions are charged to the float-graph node it comes from
(the report's ``node``; a fused RESCALE / CLAMP / PAD goes with its op), and each node's features are
:func:`tabula.quantizer.costs.node_features` of the same float graph the mixed scheme reads (MACs, outputs,
pixel taps, elements).  Per (op kind, activation dtype) a non-negative least-squares fit over the features that
kind uses gives the coefficients; printed as the ``COSTS`` table to paste, then each build's estimated total
(old and new coefficients) against its measured total, and the kinds' worst per-node errors.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402

#: Features each kind's fit uses (indices into node_features' (MACs, outputs, pixel taps, elements)).
USES = {"conv": (0, 1, 2), "depthwise": (0, 1, 2), "linear": (0, 1), "matmul": (0, 1), "add": (3,), "arith": (3,),
        "table": (3,), "softmax": (3,), "pool": (3,), "copy": (3,)}
DTYPE = {"int8": "int8", "a16w8": "int16"}
#: IR ops that codegen fuses into the op before or after them: their instructions are that op's.
_EPILOGUE = frozenset({"PAD", "RESCALE", "CLAMP"})


def build(board: str, model: str, scheme: str, build_dir: Path) -> Path:
    """The folder of the profile build of ``model`` in ``scheme`` (built unless it has a report already)."""
    name = (model if scheme == "int8" else f"{model}-{scheme}") + "-profile"
    out = build_dir / board / name
    if not (out / "report.json").is_file():
        cmd = [sys.executable, "-m", "SCons", "-Q", f"board={board}", f"example={model}", f"scheme={scheme}",
               "profile=1", "limit=2", "quiet=1", f"build_dir={build_dir}"]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode or not (out / "report.json").is_file():
            raise SystemExit(f"fit_costs: the build of {model} {scheme} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return out


def measured_per_node(report: dict) -> tuple[dict[str, float], float]:
    """Instructions per float-graph node (each emitted op to the node of its row with the most MACs, else its
    first row that is not a fused PAD / RESCALE / CLAMP) and the inference's total."""
    by_emitted: dict[int, list] = defaultdict(list)
    for r in report["rows"]:
        if r["emitted"] is not None:
            by_emitted[r["emitted"]].append(r)
    per: dict[str, float] = defaultdict(float)
    for rows in by_emitted.values():
        instr = next((r["instructions"] for r in rows if r["instructions"] is not None), None)
        if instr is None:
            continue
        core = [r for r in rows if r["op"] not in _EPILOGUE] or rows
        main = max(core, key=lambda r: (r["macs"] or 0, -r["index"]))
        per[main["node"] or main["output"]] += instr
    return dict(per), float(sum(per.values()))


def features(folder: Path, model: str, build_dir: Path, board: str):
    """``{node name: (kind, features)}`` of the model's float graph, as the cost model sees it."""
    import torch

    from tabula.quantizer.costs import node_features
    from tabula.quantizer.flow import float_graph

    ep = torch.export.load(str(build_dir / board / "examples" / model / "model.pt2"))
    gm = float_graph(ep, tuple(ep.example_inputs[0]), None, check=False)
    out = {}
    for n in gm.graph.nodes:
        f = node_features(n, gm)
        if f is not None:
            out[n.name] = f
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="kws,ic,mobilenet")
    ap.add_argument("--schemes", default="int8,a16w8")
    ap.add_argument("--board", default="corstone300")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "fit_costs"))
    a = ap.parse_args(argv)
    from scipy.optimize import nnls

    from tabula.quantizer.costs import COSTS, isa_of

    build_dir = Path(a.build_dir).resolve()
    isa = isa_of(a.board)
    samples = defaultdict(list)  # (kind, dtype) -> [(features, measured, build, node)]
    builds = []
    for model in a.models.split(","):
        feats = None
        for scheme in a.schemes.split(","):
            folder = build(a.board, model, scheme, build_dir)
            feats = feats or features(folder, model, build_dir, a.board)
            per, total = measured_per_node(json.loads((folder / "report.json").read_text()))
            dt = DTYPE[scheme]
            rows = [(kind, f, per.get(name, 0.0), name) for name, (kind, f) in feats.items()]
            for kind, f, m, name in rows:
                samples[(kind, dt)].append((f, m, f"{model} {scheme}", name))
            builds.append((f"{model} {scheme}", dt, rows, total))
    fitted = dict(COSTS[isa])
    print(f"# fitted on {', '.join(b[0] for b in builds)} ({a.board}, {isa})")
    for key in sorted(samples):
        kind, dt = key
        use = USES[kind]
        A = np.array([[s[0][i] for i in use] for s in samples[key]], dtype=float)
        y = np.array([s[1] for s in samples[key]], dtype=float)
        if not A.any():
            continue
        coef, _ = nnls(A, y)
        full = [0.0, 0.0, 0.0, 0.0]
        for i, c in zip(use, coef):
            full[i] = float(round(c, 3 if i == 0 else 1))
        fitted[key] = tuple(full)
        pred = A @ coef
        worst = max(abs(p - m) / max(m, 1.0) for p, m in zip(pred, y)) if len(y) else 0.0
        print(f'        ("{kind}", "{dt}"): {tuple(full)},   # {len(y)} ops, measured {y.sum():,.0f}, '
              f'fit {pred.sum():,.0f}, worst op {worst:.0%}')
    print()

    def estimate(coeffs, rows, dt):
        return sum(sum(c * v for c, v in zip(coeffs[(kind, dt)], f)) for kind, f, _, _ in rows)

    for label, dt, rows, total in builds:
        print(f"{label:22s} measured {total:12,.0f}   estimated: before {estimate(COSTS[isa], rows, dt):12,.0f}   "
              f"fitted {estimate(fitted, rows, dt):12,.0f}   (ops outside the cost model's nodes: "
              f"{total - sum(m for _, _, m, _ in rows):,.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
