"""First-divergence debugging (issue 23): a host build whose TABLE kernel is broken on purpose
(``TABULA_TEST_BREAK_TABLE_S8``, a test-only define, through a compiler wrapper: ``$TABULA_HOST_CC``) differs
from the reference; the run stage builds the same model with ``debug=1`` into ``<out>/debug``, asks that
firmware for every op's output of the first failing sample (TENSOR requests, docs/protocol.md) and names the
first op that differs, with the element and both values; ``tabula debug`` does the same on demand.  The build
runs on a terminal (a pty): the compile, calibration and device-run bars show there, and not where the
output is a pipe.  A firmware built without debug says so (HELLO flags) rather than answering."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from helpers import ROOT, pty_run

BROKEN_ELEMENT = 5


@pytest.fixture(scope="module")
def broken_build(digits_dir, tmp_path_factory):
    """The digits example on the host with the int8 TABLE kernel writing a wrong value at element 5 of every
    call, built and run (2 samples) by SCons on a terminal; (out folder, its output, the exit code)."""
    tmp = tmp_path_factory.mktemp("broken")
    cc = tmp / "cc-broken"
    cc.write_text(f"#!/bin/sh\nexec gcc -DTABULA_TEST_BREAK_TABLE_S8={BROKEN_ELEMENT} \"$@\"\n")
    cc.chmod(0o755)
    calib = np.load(digits_dir / "calib.npz")["x"][:64]   # under 100: min/max grids, a quick calibration
    np.savez(tmp / "calib64.npz", x=calib)
    env = {**os.environ, "TABULA_HOST_CC": str(cc), "TERM": "xterm", "OMP_NUM_THREADS": "1"}
    env.pop("TABULA_QUIET", None)
    code, shown = pty_run([sys.executable, "-m", "SCons", "-Q", "board=host", f"build_dir={tmp / 'b'}",
                            f"model={digits_dir / 'model.pt2'}", f"calib={tmp / 'calib64.npz'}",
                            f"data={digits_dir / 'test.npz'}", "name=digits", "limit=2"], env)
    return tmp / "b" / "host" / "digits", shown, code, env


@pytest.mark.host
def test_the_first_op_that_differs_is_named_with_its_element(broken_build):
    import tabula
    from tabula.reference.interpreter import run_graph

    out, shown, code, _ = broken_build
    assert code != 0  # the device differs: scons fails
    res = json.loads((out / "results.json").read_text())
    assert res["bit_exact_mismatches"] > 0 and res["first_mismatch_sample"] == 0
    d = res["first_divergence"]
    ops = json.loads((out / "debug" / "host" / "digits-debug" / "src" / "ops.json").read_text())
    assert ops["debug"] is True
    silu = next(o for o in ops["ops"] if o["op"] == "TABLE")
    assert (d["op"], d["name"], d["kernel"], d["tensor"]) == (silu["index"], "TABLE", "tabula_table_s8", "silu") == (1, "TABLE", "tabula_table_s8", "silu")
    assert d["source"].startswith("model.py:") and d["source"].endswith("node silu")
    assert d["element"] == BROKEN_ELEMENT and d["index_nd"] == [0, 0, 0, BROKEN_ELEMENT] and d["n_differ"] == 1
    # the reference's value of that element, recomputed here; the device's is what the broken kernel writes
    program = tabula.load(out)
    how = json.loads((out / "build.json").read_text())
    x = np.load(how["data"])["x"]
    trace = {}
    run_graph(program.graph, program.quantize_inputs(x[:1]), trace=trace)
    ref = int(trace["silu"].reshape(-1)[BROKEN_ELEMENT])
    assert d["reference"] == ref and d["device"] == (127 if ref != 127 else -128)
    assert any(f"element {BROKEN_ELEMENT}" in w and "op 1 TABLE" in w for w in res["warnings"])
    # the report says it too, and the run stage's line reached the terminal
    html = (out / "report.html").read_text()
    assert "First divergence" in html and "tabula_table_s8" in html
    assert re.search(rf"first divergence on sample 0: op 1 TABLE \(tabula_table_s8, model\.py:\d+ node silu\) writing silu "
                     rf"\[1, 8, 8, 8\] int8: element {BROKEN_ELEMENT}", shown)
    # normal builds render what they rendered: no debug entry point in the first build's model.c
    dbg = out / "debug" / "host" / "digits-debug"
    assert "tabula_model_run_until" not in (out / "src" / "model.c").read_text()
    assert "tabula_model_run_until" in (dbg / "src" / "model.c").read_text()
    # the debug firmware is built from this build's program (ir=), not quantized again
    assert json.loads((dbg / "build.json").read_text())["ir"] == str(out.resolve())
    assert (dbg / "ir.npz").read_bytes() == (out / "ir.npz").read_bytes()


@pytest.mark.host
def test_progress_bars_on_a_terminal_only(broken_build):
    """On the pty: the calibration, compile and device-run bars (done / total, rate, ETA); SCons's own command
    lines start on a clean line (the compile bar clears it first)."""
    out, shown, code, env = broken_build
    assert re.search(r"\rcalibration: +\d+%\|[^\r]*\| *\d+/64 \[", shown)
    assert re.search(r"\rcompile: +\d+%\|[^\r]*\| *\d+/\d+ \[[0-9:]+<[0-9:?]+, *[0-9.?]+ ?obj/s\]", shown)
    assert re.search(r"\rdevice run: +\d+%\|[^\r]*\| *\d+/2 \[", shown)
    assert "tabula.cli run --board host" in shown and not re.search(r"obj/s\][^\r\n]*tabula\.cli", shown)
    assert not re.search(r"\n[^\n]*-c -std=c99", shown.replace("\r\n", "\n"))  # no compile command echoed


@pytest.mark.host
def test_tabula_debug_on_demand_and_no_bars_in_a_pipe(broken_build):
    out, _, _, env = broken_build
    env = {k: v for k, v in env.items() if k != "TERM"}
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "debug", str(out), "--sample", "1"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 1, p.stderr[-2000:]
    assert re.search(rf"first divergence on sample 1: op 1 TABLE .* element {BROKEN_ELEMENT} \(NHWC \[0, 0, 0, "
                     rf"{BROKEN_ELEMENT}\]\) is -?\d+ on the device, -?\d+ in the reference; 1 of 512", p.stdout)
    d = json.loads((out / "divergence.json").read_text())
    assert (d["sample"], d["op"], d["element"]) == (1, 1, BROKEN_ELEMENT)
    assert "\r" not in p.stdout + p.stderr and "sample/s" not in p.stderr  # a pipe: no progress bar
    # ir= names a folder without a program: one line, before anything is built
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host", "run=0", "debug=1", f"ir={out / 'src'}",
                        f"build_dir={out.parent.parent / 'refused'}"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=600)
    assert p.returncode != 0 and "ir=" in p.stderr and "no ir.json, ir.npz" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.qemu
def test_a_firmware_without_debug_says_so(digits_m55_build):
    """TENSOR is asked only of a firmware whose HELLO has the debug flag: a normal build (corstone300 on QEMU)
    is told apart before anything is sent, and ends its run normally."""
    import tabula
    from tabula.deploy import DebugUnavailable, run_tensors_on_board

    program = tabula.load(digits_m55_build.out)
    x = np.load(digits_m55_build.data)["x"]
    payload = b"".join(a.tobytes() for a in program.quantize_inputs(x[:1]))
    with pytest.raises(DebugUnavailable, match="build it with debug=1"):
        run_tensors_on_board(digits_m55_build.elf, "corstone300", payload, 9, lambda *a: True,
                             log_path=digits_m55_build.out.parent / "nodebug.log")
