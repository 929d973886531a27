"""Issue 21's seven models: tabula int8 and a16w8 against ExecuTorch 1.5.1's Arm backend, on the same float
models and inputs.

    python benchmarks/coverage.py                          # all seven, host and corstone300 (QEMU M55)
    python benchmarks/coverage.py --models unet,tcn --boards host --executorch-python /path/to/et-venv/bin/python

Per model (``benchmarks/coverage_models.py``: random weights with fixed seeds, 32 calibration and 32 test
inputs, disjoint):

* **tabula** int8 and a16w8: ``scons board=<board> scheme=<s> model=... calib=... data=...`` on each board;
  from ``results.json``: ``bit_exact_mismatches`` (the device's outputs against the Python integer
  reference, over every test output: 0 is bit-exact) and ``sqnr_db_vs_float`` (the integer program's
  outputs against the float model's, in dB).
* **ExecuTorch 1.5.1** int8 (``benchmarks/_coverage_executorch.py`` in its own venv, ``--executorch-python``;
  default ``$EXECUTORCH_PYTHON`` or ``/work/et-venv/bin/python``): the Arm backend's ``TOSAQuantizer``
  (TOSA-1.0+INT, symmetric per-channel int8), PT2E prepare / calibrate on the same calibration inputs /
  convert, and the SQNR of its quantized simulation against the same float outputs; ``delegated`` counts
  the TOSA delegate calls ``to_edge_transform_and_lower`` makes, with the ops it left out.
* ``gap`` = tabula int8 - ExecuTorch int8 (dB): the issue's goal is ``>= -1``.

A model tabula cannot quantize yet (``nn.LSTM`` / ``nn.GRU``: issue 21 item 2) prints ``not yet`` and the
first line of the error.  Prints one table; writes ``build/coverage/results.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import coverage_models  # noqa: E402

SCHEMES = ("int8", "a16w8")


def prepare(out: Path, name: str) -> Path:
    """Write ``model.pt2``, ``calib.npz``, ``test.npz`` (tabula's) and ``weights.pt``, ``inputs.npz`` (ExecuTorch's)."""
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    model, calib, test = coverage_models.make(name)
    torch.save(model.state_dict(), d / "weights.pt")
    np.savez(d / "inputs.npz", calib=calib.numpy(), test=test.numpy())
    np.savez(d / "calib.npz", x=calib.numpy())
    np.savez(d / "test.npz", x=test.numpy())
    torch.export.save(torch.export.export(model, (calib[:1],)), d / "model.pt2")
    return d


def blocked(name: str) -> str | None:
    """The first line of tabula's refusal of the model, or None when it quantizes."""
    import tabula
    from tabula.errors import TabulaError

    model, calib, _ = coverage_models.make(name)
    from tabula.errors import UnsupportedOpError

    try:
        tabula.quantize(model, (calib[:1],), calib[:2])
    except UnsupportedOpError as e:
        return "unsupported " + ", ".join(sorted({n for n, _ in e.ops}))
    except (TabulaError, ValueError) as e:
        return str(e).splitlines()[0][:160]
    return None


def tabula_run(d: Path, name: str, board: str, scheme: str) -> dict:
    build = d / "build"
    args = [sys.executable, "-m", "SCons", "-Q", f"board={board}", f"scheme={scheme}", f"build_dir={build}",
            f"model={d / 'model.pt2'}", f"calib={d / 'calib.npz'}", f"data={d / 'test.npz'}", f"name={name}"]
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    folder = build / board / (name if scheme == "int8" else f"{name}-{scheme}")
    res = folder / "results.json"
    if p.returncode != 0 or not res.is_file():
        tail = (p.stderr or p.stdout).strip().splitlines()
        return {"error": tail[-1][:200] if tail else f"scons exit {p.returncode}"}
    r = json.loads(res.read_text())
    return {"mismatches": r.get("bit_exact_mismatches"), "sqnr_db": r.get("sqnr_db_vs_float"),
            "instructions": r.get("instructions_per_inference")}


def executorch(out: Path, names: list[str], python: str) -> dict[str, dict]:
    if not Path(python).is_file():
        return {n: {"error": f"no ExecuTorch venv at {python} (python -m venv; pip install executorch==1.5.1)"} for n in names}
    script = ROOT / "benchmarks" / "_coverage_executorch.py"
    subprocess.run([python, str(script), str(out), *names], cwd=ROOT, capture_output=True, text=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""})
    found = {}
    for n in names:
        f = out / n / "executorch.json"
        found[n] = json.loads(f.read_text()) if f.is_file() else {"error": "no result"}
    return found


def fmt(v, spec=".1f") -> str:
    return "-" if v is None else format(v, spec) if isinstance(v, (int, float)) else str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(coverage_models.MODELS))
    ap.add_argument("--boards", default="host,corstone300")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--out", default=str(ROOT / "build" / "coverage"))
    ap.add_argument("--executorch-python", default=os.environ.get("EXECUTORCH_PYTHON", "/work/et-venv/bin/python"))
    ap.add_argument("--reuse-executorch", action="store_true",
                    help="keep each model's executorch.json from an earlier run (same seeds: the same weights and inputs)")
    a = ap.parse_args(argv)
    names, boards, schemes = a.models.split(","), a.boards.split(","), a.schemes.split(",")
    out = Path(a.out)
    results: dict[str, dict] = {}
    runnable = []
    for n in names:
        prepare(out, n)
        why = blocked(n)
        results[n] = {"blocked": why} if why else {}
        if not why:
            runnable.append(n)
    todo = [n for n in names if not (a.reuse_executorch and (out / n / "executorch.json").is_file())]
    et = executorch(out, todo, a.executorch_python) if todo else {}
    et.update({n: json.loads((out / n / "executorch.json").read_text()) for n in names if n not in et})
    for n in names:
        results[n]["executorch"] = et[n]
        for board in boards if n in runnable else ():
            for s in schemes:
                results[n][f"{board}/{s}"] = tabula_run(out / n, n, board, s)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    cols = [f"{b}/{s}" for b in boards for s in schemes]
    print(f"{'model':8}  " + "  ".join(f"{c + ' dB (mism)':>24}" for c in cols) + f"  {'ExecuTorch int8 dB':>18}  {'gap':>5}  delegated")
    for n in names:
        r = results[n]
        e = r["executorch"]
        et_db = e.get("sqnr_db")
        deleg = e.get("error") or e.get("lowering_error") or f"{e.get('delegated')} calls" + \
            (f"; not: {', '.join(e['not_delegated'])}" if e.get("not_delegated") else "")
        if r.get("blocked"):
            print(f"{n:8}  not yet: {r['blocked']}  | ExecuTorch {fmt(et_db)} dB")
            continue
        cells, first = [], None
        for c in cols:
            t = r[c]
            if "error" in t:
                cells.append(f"{'error':>24}")
                continue
            first = t["sqnr_db"] if first is None and c.endswith("int8") else first
            cells.append(f"{fmt(t['sqnr_db']) + ' (' + fmt(t['mismatches'], 'd') + ')':>24}")
        gap = None if first is None or et_db is None else first - et_db
        print(f"{n:8}  " + "  ".join(cells) + f"  {fmt(et_db):>18}  {fmt(gap, '+.1f'):>5}  {deleg}")
        for c in cols:
            if "error" in r[c]:
                print(f"          {c}: {r[c]['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
