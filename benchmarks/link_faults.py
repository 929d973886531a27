"""Frames sent, damaged, detected and retried when the link damages bytes on purpose.

Runs a built example (default: the digits example of ``scons board=host``) through
tabula.deploy.faults.FaultyLink -- flipped, dropped, duplicated and delayed bytes in both
directions -- at each rate and seed, checks every output against the Python integer reference, and
prints one line per run: samples, bit-exact mismatches, frames each way, frames the injector
damaged, what each side detected, retries by cause, OUTPUTs replayed, wall time.

    scons board=host                                   # builds build/host/digits
    python benchmarks/link_faults.py                   # rates 0, 1e-3, 1e-2; seeds 1, 2, 3
    python benchmarks/link_faults.py --board corstone300 --build build/corstone300/digits --seeds 1

``--build`` is the example's build folder (firmware, ir.json), ``--data`` its test set (default:
``<build_dir>/<board>/examples/digits/test.npz``, where SCons keeps the trained example).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import numpy as np  # noqa: E402

import tabula  # noqa: E402
from tabula.deploy import SessionError, run_on_board  # noqa: E402
from tabula.deploy.faults import FaultSpec  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="host")
    ap.add_argument("--build", type=Path, default=None, help="default: build/<board>/digits")
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--rates", default="0,1e-3,1e-2")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--limit", type=int, default=0, help="first N samples only")
    a = ap.parse_args()
    build = a.build or Path("build") / a.board / "digits"
    data = a.data or build.parent / "examples" / "digits" / "test.npz"
    elf = build / "firmware.elf" if (build / "firmware.elf").is_file() else build / "firmware"

    program = tabula.load(build)
    x = np.load(data)["x"]
    if a.limit:
        x = x[: a.limit]
    int_inputs = [program.quantize_inputs(x[i : i + 1]) for i in range(len(x))]
    ref = [b"".join(o.tobytes() for o in program.run_int(*xi)) for xi in int_inputs]
    payloads = [b"".join(t.tobytes() for t in xi) for xi in int_inputs]

    print(f"{a.board}: {len(x)} samples, INPUT {len(payloads[0])} B, OUTPUT {len(ref[0])} B per sample")
    print("rate    seed  mismatches  sent/received  damaged(injected)  detected host+device  "
          "retries (nack/damaged/silence)  replayed  inferences  wall s")
    for rate in (float(r) for r in a.rates.split(",")):
        for seed in (int(s) for s in a.seeds.split(",")) if rate else [0]:
            t0 = time.monotonic()
            error = ""
            try:
                r = run_on_board(elf, a.board, payloads, faults=FaultSpec(rate=rate, seed=seed),
                                 log_path=build / "run.faults.log")
            except SessionError as e:
                r, error = e.partial, "  " + str(e).splitlines()[0][:100]
            wall = time.monotonic() - t0
            got = [b"".join(o) for o in r.outputs]
            bad = sum(g != w for g, w in zip(got, ref)) + len(ref) - len(got)
            s, inj, c = r.link_stats(), r.injected or {}, r.retries
            print(f"{rate:<7g} {seed:>4}  {bad:>10}  {s['frames_sent']:>5}/{s['frames_received']:<7} "
                  f"{inj.get('frames_damaged', 0):>5} of {inj.get('frames', 0):<9} "
                  f"{s['damaged_detected_by_host']:>5} + {s['damaged_detected_by_device']!s:<12} "
                  f"{s['retries']:>5} ({c.get('nack', 0)}/{c.get('damaged', 0)}/{c.get('silence', 0)})"
                  f"{'':<17}{s['outputs_replayed']!s:>5}  {r.n_inferences!s:>10}  {wall:>7.2f}{error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
