"""TOSA's own conformance tests on tabula's C kernels, a small fixed subset (benchmarks/tosa_conformance.py
runs the whole set): ``tosa_verif_build_tests`` makes about 50 positive tests of the PRO-INT profile with
EXT-INT16, TOSA 1.0, for every operator tabula implements (one test per dtype of each operator, a few more
of RESCALE and INTDIV: its selection mode, no special-value tests, dims 1 to 8, seed ``TABULA_SEED``)
into a temporary folder, and ``tosa_verif_run_tests --sut-module tabula.tosa.sut`` runs them as README
documents: on the host build every test passes (the runner compares our outputs with the reference
model's, exactly) or is skipped with the reason tabula's reader gives; a few run on the Cortex-M55 under
QEMU (Helium paths)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT
from tabula import tosa as T

pytest.importorskip("runner.tosa_test_runner", reason="tosa-tools is not installed: pip install -e '.[test]'")
from tabula.tosa.sut import PreparedTest, skip_reasons  # noqa: E402  (it subclasses the runner's TosaTestRunner)

pytestmark = [pytest.mark.tosa, pytest.mark.host]

SUT = "tabula.tosa.sut"
OPS = [o.lower() for o in T.supported_tosa_ops()]


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def generated(tmp_path_factory, tabula_seed) -> Path:
    """The generated tests (folder); skips when the generator is not on PATH."""
    tool = shutil.which("tosa_verif_build_tests")
    if tool is None:
        pytest.skip("tosa_verif_build_tests not on PATH: pip install tosa-tools (pip install -e '.[test]')")
    root = tmp_path_factory.mktemp("conformance")
    config = root / "selection.json"
    most = {"rescale": 4, "intdiv": 3}  # half of RESCALE's are unsigned, INTDIV's broadcast: more to draw from
    config.write_text(json.dumps({o: {"selection": {"default": {"permutes": ["type"], "maximum": most.get(o, 1), "groups": []}}}
                                  for o in OPS}))
    out = root / "tests"
    cmd = [tool, "-o", str(out), "--seed", str(tabula_seed), "--filter", f"^({'|'.join(OPS)})$", "--profile", "tosa-pro-int",
           "--extension", "tosa-ext-int16", "--test-type", "positive", "--tosa-version", "1.0.0", "--test-selection-config",
           str(config), "--test-selection-criteria", "default", "--tensor-dim-range", "1,8", "--no-special-tests"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


def _run(tests: list[str], args: list[str], tmp: Path) -> tuple[dict[str, tuple[str, str]], str]:
    """``tosa_verif_run_tests --sut-module tabula.tosa.sut`` (the command README documents) on ``tests``:
    test folder -> (pass | fail | skip, message), and the runner's output."""
    xml = tmp / "result.xml"
    cmd = [shutil.which("tosa_verif_run_tests"), "--sut-module", SUT, *args, "-t", *tests, "--test-type", "positive",
           "--xunit-file", str(xml), "--no-color", "-j", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    suite = next(s for s in ET.parse(xml).getroot() if s.get("name") == SUT)
    skips = skip_reasons(r.stdout, [case.get("name") for case in suite])
    out = {}
    for case in suite:
        name = case.get("name")
        if case.find("skipped") is not None:
            out[name] = ("skip", skips.get(name, ""))
        elif case.find("failure") is not None:
            out[name] = ("fail", case.find("failure").text or "")
        else:
            out[name] = ("pass", "")
    return out, r.stdout


def _op_of(test: Path, root: Path) -> str:
    """The operator of a generated test: its folder under ``root`` (``conv2d_3x3`` -> ``conv2d``)."""
    return re.sub(r"_\d.*$", "", test.relative_to(root).parts[0])


def _reads(t: Path) -> bool:
    """Whether tabula's reader takes the test's graph."""
    try:
        T.read((t / "test.tosa").read_bytes())
        return True
    except T.Unsupported:
        return False


def test_the_subset_passes_on_the_host_build_or_is_skipped_for_a_named_reason(generated, tmp_path):
    tests = sorted(p.parent for p in generated.rglob("desc.json"))
    assert len(tests) >= 40
    results, log = _run([str(generated), "-r"], [], tmp_path)
    assert len(results) == len(tests), log[-2000:]
    failed = {k: v for k, (r, v) in results.items() if r == "fail"}
    assert not failed, failed
    passed = [Path(k) for k, (r, _) in results.items() if r == "pass"]
    assert len(passed) >= 0.6 * len(tests)  # the rest: BOOL tensors, unsigned RESCALE, ... (named below)
    # every operator tabula implements passes at least one test (RESIZE: when its generated ones are NEAREST upscales)
    by_op = {}
    for t in passed:
        by_op.setdefault(_op_of(t, generated), []).append(t)
    readable = {op for op in OPS if any(_reads(t) for t in tests if _op_of(t, generated) == op)}
    assert set(by_op) == readable, sorted(readable - set(by_op))
    assert len(readable) >= len(OPS) - 3, sorted(set(OPS) - readable)  # RESIZE's may all be BILINEAR, ...
    # a skip says why, in the reader's words
    for name, (r, why) in results.items():
        if r == "skip":
            assert why == f"tabula: {PreparedTest(name).why}" and "\n" not in why, (name, why)
    # the runner compared real values: our result files equal the reference model's, and are not constant
    varied = 0
    for t in passed:
        desc = json.loads((t / "desc.json").read_text())
        for f in desc["ofm_file"]:
            ours, ref = (np.load(t / f.replace(".npy", f".{m}.npy")) for m in (SUT, "runner.tosa_refmodel_compliance_sut_run"))
            assert ours.dtype == ref.dtype and ours.shape == ref.shape, t.name
            np.testing.assert_array_equal(ours, ref, err_msg=t.name)
            varied += int(ours.size > 1 and ours.min() < ours.max())
    assert varied >= 0.6 * len(passed)


@pytest.mark.arm
@pytest.mark.qemu
def test_a_sample_passes_on_the_cortex_m55(generated, tmp_path, device_lib):
    """Four tests (CONV2D, DEPTHWISE_CONV2D, AVG_POOL2D and RESCALE, int8 and int16 where there are) through
    the device harness: ``--sut-module-args tabula.tosa.sut:target=m55``."""
    lib = device_lib("m55")  # the session's kernel library, so the SUT builds nothing new
    pick = []
    for op, dt in (("conv2d", "i8"), ("depthwise_conv2d", "i16"), ("avg_pool2d", "i8"), ("rescale", "i32")):
        cands = sorted(p.parent for p in generated.rglob("desc.json") if p.parent.name.startswith(op + "_")
                       and f"_{dt}" in p.parent.name and _reads(p.parent))
        assert cands, (op, dt)
        pick.append(str(cands[0]))
    results, log = _run(pick, ["--sut-module-args", f"{SUT}:target=m55", f"{SUT}:work_dir={lib.dir.parent}"], tmp_path)
    assert {v[0] for v in results.values()} == {"pass"}, (results, log[-2000:])
    assert len(results) == 4


def test_bad_sut_arguments_are_one_line():
    from tabula.tosa.sut import SutError, parse_args

    assert parse_args(["target=m4", "work_dir=/tmp/x"]) == {"target": "m4", "work_dir": "/tmp/x"}
    targets = ["host", "m55", "m55-portable", "m55-noasm", "m4", "m4-portable", "m4-noasm", "m33", "reference"]
    for bad, said in ((["target=m7"], f"target='m7'; the targets are {', '.join(targets)}"),
                      (["speed=1"], f"use target=<{'|'.join(targets)}> or work_dir=<folder>"),
                      (["m55"], "use target=")):
        with pytest.raises(SutError) as e:
            parse_args(bad)
        assert said in str(e.value) and "\n" not in str(e.value)


def test_skip_reasons_are_read_from_interleaved_runner_output():
    """With -j 2 one thread's text can follow a folder's name on the same line, even the next test's
    ``Skipping`` (seen in a seed-7 run): every skipped folder still gets its own reason."""
    a, b, c = "/t/resize_1x2_is_s1", "/t/resize_1x2_is_s2", "/t/resize_1x2_is_s10"
    out = (f"Skipping tabula: RESIZE: mode BILINEAR is not supported test {a}Skipping tabula: MUL: int8 test {b}\n"
           f"runner: Result code PASS x\nSkipping tabula: RESCALE: input_unsigned True test {c}runner: Result code PASS y\n")
    assert skip_reasons(out, [a, b, c, "/t/other"]) == {
        a: "tabula: RESIZE: mode BILINEAR is not supported", b: "tabula: MUL: int8", c: "tabula: RESCALE: input_unsigned True"}


def test_the_runner_loads_the_sut_module_from_this_checkout():
    r = subprocess.run([sys.executable, "-c", "import tabula.tosa.sut as s; print(s.__file__); print(s.TosaSUTRunner.__mro__[1].__name__)"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    path, base = r.stdout.split()
    assert Path(path) == ROOT / "python" / "tabula" / "tosa" / "sut.py" and base == "TosaTestRunner"
