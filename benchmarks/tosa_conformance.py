"""TOSA's own conformance tests on tabula's C kernels: generate, run, count.

    python benchmarks/tosa_conformance.py                      # every op, seed 1, host + a sample on QEMU
    python benchmarks/tosa_conformance.py --seed 7 --ops conv2d,rescale --sample 20 --targets host,m4

For every TOSA operator tabula implements (:func:`tabula.tosa.supported_tosa_ops`) this generates the
positive tests of the PRO-INT profile with the EXT-INT16 extension, TOSA 1.0 (``tosa_verif_build_tests
--seed <seed> --filter ^<op>$ --profile tosa-pro-int --extension tosa-ext-int16 --test-type positive
--tosa-version 1.0.0``, then the special-value tests it makes in its selection mode: :func:`generate`), into
``--out`` (default ``<tmp>/tabula-conformance/seed-<seed>``; reused when already generated with the same
arguments), and runs them with TOSA's runner on tabula as the system under
test (``tosa_verif_run_tests --sut-module tabula.tosa.sut``, :mod:`tabula.tosa.sut`): every test on the host
build, and on each QEMU target (``m55`` Helium, ``m55-portable``, ``m4`` DSP) a sample of ``--sample`` tests
per operator, drawn with the seed from the tests the host runs (and that fit the device harness).  The runner
checks each output against the TOSA reference model's (``tosa_verify``: exact for integers).

Prints per operator: tests generated, then per target passed, failed and skipped, and every skip reason with
its count (numbers in shapes folded to ``…``); writes the same into ``<out>/results.json``.  Exit code 1 when
any test failed.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from tabula import tosa as T  # noqa: E402
from tabula.tosa import sut  # noqa: E402

PROFILE = ["--profile", "tosa-pro-int", "--extension", "tosa-ext-int16", "--test-type", "positive", "--tosa-version", "1.0.0"]
SUT = "tabula.tosa.sut"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        sys.exit(f"tosa_conformance: {name} not on PATH: pip install tosa-tools (a test extra: pip install -e '.[test]')")
    return path


def _env() -> dict:
    """The environment of the runner: this checkout's tabula first on the path, one OpenMP thread."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _build(args: list[str], d: Path, what: str) -> None:
    """Run tosa_verif_build_tests with ``args`` into ``d`` unless ``d/generated.json`` says it already did."""
    stamp = d / "generated.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("args") == args[1:]:
        return
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    r = subprocess.run(args, capture_output=True, text=True, env=_env())
    if r.returncode != 0:
        sys.exit(f"tosa_conformance: tosa_verif_build_tests failed for {what}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    stamp.write_text(json.dumps({"args": args[1:]}))


def generate(op: str, seed: int, out: Path, extra: list[str], special: bool = True) -> list[Path]:
    """The test folders of ``op``: every test ``tosa_verif_build_tests`` generates for it (``out/<op>``) and,
    with ``special``, its special-value tests (full-range and extreme inputs, ``*_is*`` / ``*_full``), which
    it makes only in its selection mode (``out/<op>-special``: a selection of one test per dtype plus every
    special test; the tests the first set already has are not run twice).  Each set is generated once per
    set of arguments (a stamp file)."""
    tool = _tool("tosa_verif_build_tests")
    base = ["--seed", str(seed), "--filter", f"^{op}$", *PROFILE, *extra]
    d = out / op
    _build([tool, "-o", str(d), *base], d, op)
    tests = sorted(p.parent for p in d.rglob("desc.json"))
    if special:
        ds = out / f"{op}-special"
        config = out / "selection.json"
        ops = [o.lower() for o in T.supported_tosa_ops()]
        text = json.dumps({o: {"selection": {"default": {"permutes": ["type"], "maximum": 1, "groups": []}}} for o in ops},
                          indent=1)
        if not config.is_file() or config.read_text() != text:  # an older folder's may lack an op added since
            config.write_text(text)
        _build([tool, "-o", str(ds), *base, "--test-selection-config", str(config), "--test-selection-criteria", "default"],
               ds, f"{op} (special tests)")
        have = {t.name for t in tests}
        tests += sorted(p.parent for p in ds.rglob("desc.json") if p.parent.name not in have)
    return tests


def run(tests: list[Path], target: str, out: Path, jobs: int, work_dir: str, reuse: bool = False) -> dict[str, tuple[str, str]]:
    """Run ``tests`` with TOSA's runner on ``target``: test folder -> (``"pass"`` | ``"fail"`` | ``"skip"``, message).
    ``reuse``: read the results of the last run of the same tests on this target instead (``<out>/results-<target>.xml``)."""
    if not tests:
        return {}
    listing = out / f"tests-{target}.txt"
    text = "".join(f"{t}\n" for t in tests)
    xml = out / f"results-{target}.xml"
    log = out / f"run-{target}.log"
    if not (reuse and listing.is_file() and listing.read_text() == text and xml.is_file() and log.is_file()):
        listing.write_text(text)
        cmd = [_tool("tosa_verif_run_tests"), "--sut-module", SUT, "--sut-module-args", f"{SUT}:target={target}",
               f"{SUT}:work_dir={work_dir}", "-T", str(listing), "--test-type", "positive", "-j", str(jobs),
               "--xunit-file", str(xml), "--no-color"]
        with log.open("w") as f:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, env=_env())
    skips = sut.skip_reasons(log.read_text(errors="replace"), tests)
    results = {}
    suite = next((s for s in ET.parse(xml).getroot() if s.get("name") == SUT), None)
    for case in (suite if suite is not None else []):
        name = case.get("name")
        if case.find("skipped") is not None:
            results[name] = ("skip", skips.get(name, "skipped"))
        elif case.find("failure") is not None:
            results[name] = ("fail", (case.find("failure").text or "").strip())
        else:
            results[name] = ("pass", "")
    for t in tests:
        results.setdefault(str(t), ("fail", f"no result from the runner (see {log})"))
    return results


def fold(reason: str) -> str:
    """A skip reason with the numbers of its shapes and lists folded, so that one rule counts once."""
    reason = re.sub(r"^tabula: ", "", reason)
    reason = re.sub(r"\((?:-?\d+, )*-?\d+,?\)", "(…)", reason)
    reason = re.sub(r"\[(?:-?\d+, )*-?\d+\]", "[…]", reason)
    return re.sub(r"\b\d{3,}\b", "N", reason)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="tosa_verif_build_tests --seed, and the QEMU sample's (default 1)")
    ap.add_argument("--ops", default="", help="comma-separated TOSA operators, lower case (default: every one tabula implements)")
    ap.add_argument("--out", default="", help="where the tests go (default <tmp>/tabula-conformance/seed-<seed>)")
    ap.add_argument("--sample", type=int, default=6, help="tests per operator on each QEMU target (default 6)")
    ap.add_argument("--targets", default="host,m55,m55-portable,m4", help="comma-separated (default host,m55,m55-portable,m4)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runner threads (default 2)")
    ap.add_argument("--work-dir", default="", help="where the kernel libraries are built (default <tmp>/tabula-sut)")
    ap.add_argument("--generate-arg", action="append", default=[], help="one more tosa_verif_build_tests argument (repeatable)")
    ap.add_argument("--no-special", action="store_true", help="without the special-value tests (see generate())")
    ap.add_argument("--reuse", action="store_true", help="read a target's results of the last run of the same tests")
    a = ap.parse_args(argv)

    known = [o.lower() for o in T.supported_tosa_ops()]
    ops = [o.strip().lower() for o in a.ops.split(",") if o.strip()] or known
    bad = [o for o in ops if o not in known]
    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    wrong = [t for t in targets if t not in ("host", *sut.DEVICE_TARGETS)]
    if bad or wrong:
        sys.exit(f"tosa_conformance: unknown {'operators ' + ', '.join(bad) if bad else ''}"
                 f"{' targets ' + ', '.join(wrong) if wrong else ''}; operators: {', '.join(known)}; targets: host, "
                 f"{', '.join(sut.DEVICE_TARGETS)}")
    out = Path(a.out) if a.out else Path(os.environ.get("TMPDIR", "/tmp")) / "tabula-conformance" / f"seed-{a.seed}"
    out.mkdir(parents=True, exist_ok=True)
    work = a.work_dir or str(sut.default_work_dir())

    t0 = time.time()
    tests = {}
    for op in ops:
        tests[op] = generate(op, a.seed, out, a.generate_arg, special=not a.no_special)
        print(f"generated {op}: {len(tests[op])} tests", flush=True)
    results: dict[str, dict[str, tuple[str, str]]] = {}
    host_ok = set()
    if "host" in targets:
        results["host"] = run([t for op in ops for t in tests[op]], "host", out, a.jobs, work, a.reuse)
        host_ok = {k for k, (v, _) in results["host"].items() if v != "skip"}
        print(f"ran host: {len(results['host'])} tests", flush=True)
    sampled: dict[str, dict[str, list[Path]]] = {}
    for target in targets:
        if target == "host":
            continue
        rng = random.Random(f"{a.seed}-{target}")
        pick = {}
        for op in ops:
            fits = [t for t in tests[op] if (not host_ok or str(t) in host_ok) and sut.PreparedTest(t, target=target).why is None]
            pick[op] = sorted(rng.sample(fits, min(a.sample, len(fits))))
        sampled[target] = pick
        results[target] = run([t for op in ops for t in pick[op]], target, out, a.jobs, work, a.reuse)
        print(f"ran {target}: {len(results[target])} tests", flush=True)

    summary = {"seed": a.seed, "out": str(out), "generator": PROFILE, "ops": {}}
    print(f"\nTOSA 1.0 conformance on tabula (tosa_verif_build_tests --seed {a.seed}, PRO-INT + EXT-INT16, positive tests; "
          f"QEMU: {a.sample} per operator, sampled with the seed)\n")
    head = f"{'operator':<18}{'generated':>10}" + "".join(f" | {t + (' (sample)' if t != 'host' else ''):>26}" for t in targets)
    print(head)
    print(f"{'':<28}" + "".join(f" | {'pass':>8}{'fail':>9}{'skip':>9}" for _ in targets))
    failed = 0
    for op in ops:
        row = {"generated": len(tests[op])}
        line = f"{op:<18}{len(tests[op]):>10}"
        for target in targets:
            names = [str(t) for t in (tests[op] if target == "host" else sampled[target][op])]
            c = Counter(results[target][n][0] for n in names)
            failed += c["fail"]
            row[target] = {"tests": len(names), "pass": c["pass"], "fail": c["fail"], "skip": c["skip"],
                           "skip_reasons": dict(Counter(fold(results[target][n][1]) for n in names
                                                        if results[target][n][0] == "skip").most_common()),
                           "failures": {n: results[target][n][1][:500] for n in names if results[target][n][0] == "fail"}}
            line += f" | {c['pass']:>8}{c['fail']:>9}{c['skip']:>9}"
        summary["ops"][op] = row
        print(line)
    print("\nskipped, by reason (host):")
    for op in ops:
        for reason, n in summary["ops"][op].get("host", {}).get("skip_reasons", {}).items():
            print(f"  {op:<18}{n:>5}  {reason}")
    for target in targets:
        for op in ops:
            for name, msg in summary["ops"][op][target]["failures"].items():
                print(f"FAILED {target} {name}: {msg.splitlines()[0] if msg else ''}")
    summary["seconds"] = round(time.time() - t0, 1)
    (out / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\n{sum(len(v) for v in tests.values())} tests, {failed} failed, {summary['seconds']} s; {out / 'results.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
