"""Build and validate time (issue 22 part 5), CPU seconds (user + sys of every process a step starts) and wall:

- a fresh digits build (``scons board=corstone300`` into an empty ``build_dir``: training the example, every
  stage, every object, the 360 samples on QEMU), and the same model again into a fresh model folder of that
  ``build_dir`` (the example and the board's objects are there: what a second model of the board pays);
- a second model on the same board (digits ``scheme=a16w8``, ``run=0``): the objects it compiles, counted;
- digits' 360 test samples on QEMU (the session alone: QEMU's start, every INPUT/OUTPUT, the end);
- a synthetic 4 M-parameter model (one 2048x2048 FULLY_CONNECTED, 4,194,304 int8 weights): what compiling its
  own objects (``model.c`` and, where the checkout has them, ``model_constants.S``) costs.

    python benchmarks/build_time.py                       # this checkout
    python benchmarks/build_time.py --checkout /tmp/old   # another checkout of tabula (e.g. a commit before)
    python benchmarks/build_time.py --repeat 3 --json out.json

Each figure is measured ``--repeat`` times (the machine may be shared: CPU seconds move less than wall);
the lowest and every value are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SESSION = r"""
import json, resource, sys, time
import numpy as np
import tabula
from tabula.deploy import run_on_board
ir, elf, data = sys.argv[1:4]
program = tabula.load(ir)
x = np.load(data)["x"]
inputs = [b"".join(np.ascontiguousarray(q).tobytes() for q in program.quantize_inputs(x[i : i + 1])) for i in range(len(x))]
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
c0, t0 = cpu(), time.monotonic()
r = run_on_board(elf, "corstone300", inputs)
print(json.dumps({"wall": time.monotonic() - t0, "cpu": cpu() - c0, "samples": len(r.outputs)}))
"""

BIG = r"""
import sys
import numpy as np
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(2048, 2048, bias=True)).eval()
x = torch.randn(8, 2048)
torch.export.save(torch.export.export(m, (x[:1],)), sys.argv[1] + "/big.pt2")
np.savez(sys.argv[1] + "/big_calib.npz", x=x.numpy())
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str], checkout: Path, **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """(CPU seconds of the process tree, wall seconds, the finished process) of ``argv`` run in ``checkout``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(checkout / "python")}
    c0, t0 = _children_cpu(), time.monotonic()
    p = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, **kw)
    wall, cpu = time.monotonic() - t0, _children_cpu() - c0
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return cpu, wall, p


def scons(checkout: Path, *args: str):
    return timed([sys.executable, "-m", "SCons", "-Q", *args], checkout)


def compiled(stdout: str) -> list[str]:
    """The objects a (non-terminal: one line per command) SCons run compiled."""
    return [m.group(1) for m in re.finditer(r"gcc -o (\S+\.o) -c ", stdout)]


def measure(checkout: Path, work: Path, weights: bool = True) -> dict:
    out: dict = {}
    b = work / "b"
    shutil.rmtree(b, ignore_errors=True)
    cpu, wall, p = scons(checkout, "board=corstone300", f"build_dir={b}", "quiet=1")
    out["fresh_digits_build"] = {"cpu": cpu, "wall": wall, "objects_compiled": len(compiled(p.stdout))}
    shutil.rmtree(b / "corstone300" / "digits")
    cpu, wall, p = scons(checkout, "board=corstone300", f"build_dir={b}", "quiet=1")
    out["digits_model_folder_again"] = {"cpu": cpu, "wall": wall, "objects_compiled": len(compiled(p.stdout))}
    shutil.rmtree(b / "corstone300" / "digits-a16w8", ignore_errors=True)
    cpu, wall, p = scons(checkout, "board=corstone300", f"build_dir={b}", "quiet=1", "scheme=a16w8", "run=0")
    objs = compiled(p.stdout)
    out["second_model_same_board"] = {"cpu": cpu, "wall": wall, "objects_compiled": len(objs),
                                      "objects": sorted(Path(o).name for o in objs)}
    d = b / "corstone300" / "digits"
    cpu, wall, p = timed([sys.executable, "-c", SESSION, str(d), str(d / "firmware.elf"),
                          str(b / "corstone300" / "examples" / "digits" / "test.npz")], checkout)
    s = json.loads(p.stdout.strip().splitlines()[-1])
    out["digits_360_samples_qemu"] = {"cpu": s["cpu"], "wall": s["wall"], "samples": s["samples"]}
    if weights:
        out["weights_4m"] = weights_4m(checkout, work)
    return out


def weights_4m(checkout: Path, work: Path) -> dict:
    """Build the 4 M-parameter model (run=0), then compile its own objects again with the build's own
    commands, timed."""
    m = work / "big"
    shutil.rmtree(m, ignore_errors=True)
    m.mkdir(parents=True)
    timed([sys.executable, "-c", BIG, str(m)], checkout)
    b = work / "bbig"
    shutil.rmtree(b, ignore_errors=True)
    cpu, wall, p = scons(checkout, "board=corstone300", f"build_dir={b}", "quiet=1", "run=0",
                         f"model={m / 'big.pt2'}", f"calib={m / 'big_calib.npz'}", "name=big")
    res = {"params": 2048 * 2048 + 2048, "build_cpu": cpu, "build_wall": wall, "objects": {}}
    src = b / "corstone300" / "big" / "src"
    res["c_text_bytes"] = (src / "model.c").stat().st_size
    res["bin_bytes"] = (src / "model_constants.bin").stat().st_size if (src / "model_constants.bin").is_file() else 0
    for line in p.stdout.splitlines():
        argv = shlex.split(line)
        if argv and argv[0].endswith("gcc") and "-c" in argv and "/big/obj/model/" in argv[argv.index("-o") + 1]:
            cpu, wall, _ = timed(argv, checkout)
            res["objects"][Path(argv[argv.index("-o") + 1]).name] = {"cpu": cpu, "wall": wall}
    res["compile_cpu"] = sum(o["cpu"] for o in res["objects"].values())
    res["compile_wall"] = sum(o["wall"] for o in res["objects"].values())
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build and validate time of tabula, CPU seconds and wall (issue 22)")
    ap.add_argument("--checkout", default=str(ROOT), help="the tabula checkout to measure (default: this one)")
    ap.add_argument("--repeat", type=int, default=1, help="measure each step this many times (default 1)")
    ap.add_argument("--no-weights", action="store_true", help="skip the 4 M-parameter model")
    ap.add_argument("--work", default="", help="scratch folder (default: a temporary one, removed)")
    ap.add_argument("--json", default="", help="also write every measurement here")
    a = ap.parse_args(argv)
    checkout = Path(a.checkout).resolve()
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="tabula-build-time-"))
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    runs = [measure(checkout, work, weights=not a.no_weights) for _ in range(a.repeat)]
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"tabula build time: {checkout} ({commit}), {a.repeat} run(s), {os.cpu_count()} CPUs; lowest [every run]")

    def row(label, key, field="cpu", wall="wall", extra=""):
        cpus = [r[key][field] for r in runs if key in r]
        walls = [r[key][wall] for r in runs if key in r]
        if cpus:
            print(f"  {label:<44} CPU {min(cpus):6.2f} s {[round(c, 2) for c in cpus]}   wall {min(walls):6.2f} s "
                  f"{[round(w, 2) for w in walls]}{extra}")

    r0 = runs[0]
    row("fresh digits build (empty build_dir)", "fresh_digits_build",
        extra=f"   objects compiled {r0['fresh_digits_build']['objects_compiled']}")
    row("digits again, fresh model folder", "digits_model_folder_again",
        extra=f"   objects compiled {r0['digits_model_folder_again']['objects_compiled']}")
    s = r0["second_model_same_board"]
    row("second model, same board (a16w8, run=0)", "second_model_same_board",
        extra=f"   objects compiled {s['objects_compiled']}"
        + (f" ({', '.join(s['objects'])})" if s["objects_compiled"] <= 4 else ""))
    row(f"digits' {r0['digits_360_samples_qemu']['samples']} samples on QEMU (session)", "digits_360_samples_qemu")
    if "weights_4m" in r0:
        w = r0["weights_4m"]
        row(f"4 M-param model: compiling its objects", "weights_4m", "compile_cpu", "compile_wall",
            extra=f"   ({', '.join(w['objects'])}; model.c {w['c_text_bytes']:,} B, .bin {w['bin_bytes']:,} B)")
        row("4 M-param model: whole build (run=0)", "weights_4m", "build_cpu", "build_wall")
    if a.json:
        Path(a.json).write_text(json.dumps({"checkout": str(checkout), "commit": commit, "runs": runs}, indent=1,
                                           sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
