"""Every bad input a user (or a tampered file) can give ends in one clear error line, or an explicit
warning in the report, never a traceback or a silently wrong figure (issue 12).

Kinds: 1 a tampered IR (one verifier: ``tabula.ir.verify``), 3 degenerate data, 4 bad arguments,
5 paths, 6 environment faults, 7 concurrent builds, 8 install extras, 9 byte-reproducible builds.
Most cases run the CLI in-process (``tabula.cli.main``: the same code path, no interpreter start);
the builds are three SCons runs (two in parallel, all ``run=0``).
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula.cli import main as cli_main
from tabula.errors import IRError, QuantizationError, RunnerError, StageError

ROOT = Path(__file__).resolve().parents[2]


def _one_line_error(capsys, rc: int, *words: str) -> str:
    """The CLI's stderr: exit code 2, one ``tabula: error:`` line naming ``words``, no traceback."""
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tabula: error:"), err
    for w in words:
        assert re.search(w, err), (w, err)
    return err


def _single_line(e: BaseException, *words: str) -> None:
    msg = str(e)
    assert "\n" not in msg, msg
    for w in words:
        assert re.search(w, msg), (w, msg)


def _no_tmp(d: Path) -> None:
    assert not [p for p in Path(d).rglob("*") if ".tmp" in p.name], list(Path(d).rglob("*.tmp*"))


class _Tiny(nn.Module):
    def __init__(self, n_out: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.fc = nn.Linear(2 * 4 * 4, n_out)

    def forward(self, x):
        return self.fc(torch.flatten(torch.sigmoid(self.conv(x)), 1))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny conv -> sigmoid -> linear model, its files, and its program saved in ``prog/``."""
    d = tmp_path_factory.mktemp("bad inputs é")  # a space and a non-ASCII letter in every path
    torch.manual_seed(0)
    m = _Tiny().eval()
    x = torch.randn(24, 1, 6, 6)
    torch.export.save(torch.export.export(m, (x[:1],)), d / "tiny.pt2")
    torch.manual_seed(1)
    other = _Tiny().eval()
    with torch.no_grad():
        other.fc.weight *= 10
    torch.export.save(torch.export.export(other, (x[:1],)), d / "other.pt2")   # same shapes, other weights
    torch.export.save(torch.export.export(_Tiny(5).eval(), (x[:1],)), d / "wide.pt2")   # 5 outputs
    np.savez(d / "calib.npz", x=x.numpy())
    np.savez(d / "test.npz", x=x[:6].numpy(), y=np.array([0, 1, 2, 0, 1, 2]))
    tabula.lower(tabula.quantize(m, (x[:1],), x)).save(d / "prog")
    return d


# ---- 1: the IR is trusted no more: one verifier, called by load, codegen and run ------------------------

def _tensor(name):
    return lambda j: next(t for t in j["tensors"] if t["name"] == name)


def _set_tensor(name, key, value):
    return lambda j, z: _tensor(name)(j).__setitem__(key, value)


def _set_attr(op, key, value):
    def f(j, z):
        next(o for o in j["ops"] if o["op"] == op)["attrs"][key] = value
    return f


def _const(name, fn):
    return lambda j, z: z.__setitem__(name, fn(z[name]))


IR_CASES = {
    "table_100_entries": (_const("sigmoid_table", lambda a: a[:100]), r"'sigmoid_table'.*\(100,\).*\(256,\)"),
    "weights_wrong_shape": (_const("linear_weight", lambda a: a[:, :16]), r"'linear_weight'.*\(3, 16\)"),
    "weights_float": (_const("linear_weight", lambda a: a.astype(np.float32)), r"'linear_weight'.*float32"),
    "bias_int64": (_const("linear_bias", lambda a: a.astype(np.int64)), r"'linear_bias'.*int64"),
    "scale_zero": (_set_tensor("conv2d", "scale", 0.0), r"'conv2d'.*scale 0\.0 must be finite and > 0"),
    "scale_negative": (_set_tensor("x", "scale", -0.5), r"'x'.*scale -0\.5"),
    "scale_nan": (_set_tensor("linear", "scale", float("nan")), r"'linear'.*scale nan"),
    "scale_not_a_number": (_set_tensor("conv2d", "scale", "big"), r"'conv2d'.*scale 'big'"),
    "per_channel_scale_count": (_set_tensor("conv2d_weight", "scale", [0.1, 0.2, 0.3]), r"3 per-channel scales"),
    "io_scale_list": (_set_tensor("x", "scale", [0.1]), r"'x'.*needs one scale"),
    "rescale_multiplier_0": (_set_attr("RESCALE", "multiplier", [0, 0]), r"RESCALE.*multiplier \[0, 0\] has a 0"),
    "rescale_shift_1": (_set_attr("RESCALE", "shift", [1, 1]), r"shift \[1, 1\] outside \[2, 62\]"),
    "int8_zero_point_1000": (_set_tensor("conv2d", "zero_point", 1000), r"int8 zero point 1000.*\[-128, 127\]"),
    "int32_zero_point_5": (_set_tensor("conv2d_acc", "zero_point", 5), r"int32 zero point 5"),
    "zero_point_fraction": (_set_tensor("conv2d", "zero_point", 1.5), r"zero point 1\.5 must be an integer"),
    "qrange_outside_dtype": (_set_tensor("x", "qrange", [-300, 300]), r"qrange \(-300, 300\)"),
    "conv_input_zp_out_of_range": (_set_attr("CONV2D", "input_zp", 500), r"CONV2D.*input_zp=500"),
    "unknown_ir_version": (lambda j, z: j.__setitem__("version", 99), r"IR version 99.*regenerate"),
    "missing_constant": (lambda j, z: z.pop("linear_bias"), r"'linear_bias' has no data"),
    "stray_constant": (lambda j, z: z.__setitem__("bogus", np.zeros(3)), r"'bogus'.*does not declare"),
    "missing_tensor": (lambda j, z: j["tensors"].remove(_tensor("conv2d")(j)), r"'conv2d' is not defined"),
    "duplicate_tensor": (lambda j, z: j["tensors"].append(dict(j["tensors"][0])), r"defined twice"),
    "unknown_op": (lambda j, z: j["ops"][3].__setitem__("op", "FOO"), r"FOO.*unknown IR op"),
    "negative_dim": (_set_tensor("conv2d", "shape", [1, -4, 4, 2]), r"shape \(1, -4, 4, 2\)"),
    "float_dtype": (_set_tensor("conv2d", "dtype", "float32"), r"unknown IR dtype 'float32'"),
    "missing_attribute": (lambda j, z: next(o for o in j["ops"] if o["op"] == "CONV2D")["attrs"].pop("stride"),
                          r"missing attribute 'stride'"),
    "no_outputs": (lambda j, z: j.__setitem__("outputs", []), r"0 output\(s\)"),
    "io_layout_unknown": (lambda j, z: j["io_layout"].__setitem__("x", "NWHC"), r"io_layout of 'x' is 'NWHC'"),
    "io_layout_stray": (lambda j, z: j["io_layout"].__setitem__("conv2d", "plain"), r"io_layout names 'conv2d'"),
}


def _tampered(tiny, tmp_path, change) -> Path:
    d = tmp_path / "ir"
    shutil.copytree(tiny / "prog", d)
    j = json.loads((d / "ir.json").read_text())
    with np.load(d / "ir.npz") as f:
        z = {k: f[k] for k in f.files}
    change(j, z)
    (d / "ir.json").write_text(json.dumps(j))
    np.savez(d / "ir.npz", **z)
    return d


def test_the_fixture_names_what_the_cases_tamper_with(tiny):
    j = json.loads((tiny / "prog" / "ir.json").read_text())
    names = {t["name"] for t in j["tensors"]}
    assert {"x", "conv2d", "conv2d_acc", "conv2d_weight", "linear", "linear_weight", "linear_bias", "sigmoid_table"} <= names


@pytest.mark.parametrize("case", sorted(IR_CASES))
def test_tampered_ir_is_refused_by_codegen(tiny, tmp_path, capsys, case):
    change, words = IR_CASES[case]
    d = _tampered(tiny, tmp_path, change)
    rc = cli_main(["codegen", "--ir", str(d), "--out", str(d / "src")])
    _one_line_error(capsys, rc, words, r"regenerate|malformed|version")
    assert not (d / "src" / "model.c").exists()


@pytest.mark.parametrize("case", ["table_100_entries", "scale_zero", "rescale_multiplier_0", "missing_tensor"])
def test_tampered_ir_is_refused_by_load_and_run(tiny, tmp_path, case):
    change, words = IR_CASES[case]
    d = _tampered(tiny, tmp_path, change)
    with pytest.raises(IRError) as e:
        tabula.load(d)
    _single_line(e.value, words, str(d).replace("\\", "\\\\").replace("(", r"\("), "regenerate")
    from tabula.stages import run_and_report

    with pytest.raises(IRError):
        run_and_report(tmp_path / "no.elf", "host", d, tiny / "test.npz", tiny / "tiny.pt2", tmp_path / "o")
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_graph_built_in_memory_is_verified_too(tiny):
    g = tabula.load(tiny / "prog").graph
    g.tensors["conv2d"].scale = -1.0
    with pytest.raises(IRError, match="scale -1.0 must be finite"):
        tabula.Program(g)
    from tabula.codegen import generate

    with pytest.raises(IRError, match="scale -1.0"):
        generate(g, "/nonexistent/never-written")


# ---- 6: damaged files name the file ---------------------------------------------------------------------

@pytest.mark.parametrize("damage,words", [
    (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), r"ir\.npz is not a readable \.npz"),
    (lambda p: p.write_text("hello, I am text\n"), r"ir\.npz is not a readable \.npz"),
    (lambda p: np.save(p.open("wb"), np.zeros(3)), r"ir\.npz"),
    (lambda p: (p.parent / "ir.json").write_text("{not json"), r"ir\.json is not readable IR JSON"),
])
def test_damaged_ir_files_are_named(tiny, tmp_path, capsys, damage, words):
    d = tmp_path / "ir"
    shutil.copytree(tiny / "prog", d)
    damage(d / "ir.npz")
    _one_line_error(capsys, cli_main(["codegen", "--ir", str(d), "--out", str(d / "src")]), words)


@pytest.mark.parametrize("write,words", [
    (lambda p: p.write_text("x = 1\n"), r"calib\.npz is not a readable \.npz"),
    (lambda p: np.save(p.open("wb"), np.zeros((4, 1, 6, 6), np.float32)), r"holds a single array \(a \.npy\)"),
    (lambda p: p.write_bytes(_npz_bytes(x=np.zeros((4, 1, 6, 6), np.float32))[:200]), r"calib\.npz"),
    (lambda p: np.savez(p, x=np.ones((4, 1, 6, 6), np.complex64)), r"'x' is complex"),
    (lambda p: np.savez(p, x=np.array([["a"] * 36] * 4).reshape(4, 1, 6, 6)), r"dtype <U1"),
    (lambda p: np.savez(p, inputs=np.ones((4, 1, 6, 6), np.float32)), r"has no array 'x'"),
])
def test_bad_calibration_files_are_named(tiny, tmp_path, capsys, write, words):
    calib = tmp_path / "calib.npz"
    write(calib)
    rc = cli_main(["quantize", "--model", str(tiny / "tiny.pt2"), "--calib", str(calib), "--out", str(tmp_path / "o")])
    _one_line_error(capsys, rc, words)
    assert not (tmp_path / "o" / "ir.json").exists()


def _npz_bytes(**arrays) -> bytes:
    import io

    b = io.BytesIO()
    np.savez(b, **arrays)
    return b.getvalue()


@pytest.mark.parametrize("content,words", [("{broken", r"results\.json is not a readable results\.json"),
                                           ("[1, 2]", r"holds a JSON list"), (None, r"results\.json not found")])
def test_show_names_a_corrupt_or_missing_results_file(tmp_path, capsys, content, words):
    p = tmp_path / "results.json"
    if content is not None:
        p.write_text(content)
    _one_line_error(capsys, cli_main(["show", str(p)]), words)
    _one_line_error(capsys, cli_main(["show", str(tmp_path)]), words)  # the build folder itself


def test_scons_names_a_missing_model_before_building_anything(tiny, tmp_path):
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host", f"build_dir={tmp_path / 'b'}",
                        f"model={tmp_path / 'nonexistent.pt2'}", f"calib={tiny / 'calib.npz'}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and re.search(r"model=\S*nonexistent\.pt2 not found", p.stderr), p.stderr
    assert "Traceback" not in p.stderr + p.stdout and not (tmp_path / "b").exists()


def test_a_full_disk_leaves_no_tmp_and_one_line(tiny, tmp_path, monkeypatch):
    program = tabula.load(tiny / "prog")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(StageError) as e:
        program.save(tmp_path / "out")
    _single_line(e.value, r"cannot write .*ir\.npz: No space left on device", "free disk space")
    _no_tmp(tmp_path)
    assert not list((tmp_path / "out").iterdir())


def test_a_full_disk_in_codegen_and_report(tiny, tmp_path, monkeypatch):
    from tabula.report import write_results

    real = Path.write_text

    def full(self, *a, **k):
        if self.name.endswith(".tmp") or ".tmp." in self.name:
            real(self, "partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(StageError, match=r"results\.json: No space left"):
        write_results(tmp_path / "results.json", {"a": 1})
    _no_tmp(tmp_path)
    rc = cli_main(["codegen", "--ir", str(tiny / "prog"), "--out", str(tmp_path / "src")])
    assert rc == 2
    _no_tmp(tmp_path)
    assert not (tmp_path / "src" / "model.c").exists()


def _boards_root(tmp_path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(ROOT / "boards", root / "boards")
    (root / "boards" / "broken").mkdir()
    (root / "boards" / "broken" / "board.toml").write_text('name = "broken"\ncpu = [\n')
    return root


def test_a_broken_board_toml_is_named_and_the_others_listed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TABULA_ROOT", str(_boards_root(tmp_path)))
    rc = cli_main(["boards"])
    out = capsys.readouterr()
    assert rc == 2 and "corstone300" in out.out and "Traceback" not in out.err
    assert out.err.count("\n") == 1 and "broken/board.toml is not readable TOML" in out.err and "fix it" in out.err


def test_scons_board_list_survives_a_broken_board(tmp_path):
    env = {**os.environ, "TABULA_ROOT": str(_boards_root(tmp_path))}
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=list"], cwd=ROOT, capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 2 and "corstone300" in p.stdout
    assert "Traceback" not in p.stderr + p.stdout and "broken/board.toml" in p.stderr


@pytest.mark.parametrize("toml,words", [
    ('name = "broken"\n', r"missing keys"),
    (None, r"invalid literal for int\(\).*'fast'"),
])
def test_load_board_names_the_file(tmp_path, monkeypatch, toml, words):
    from tabula.boards import load_board
    from tabula.errors import BoardError

    root = _boards_root(tmp_path)
    path = root / "boards" / "broken" / "board.toml"
    if toml is None:
        toml = (root / "boards" / "host" / "board.toml").read_text().replace('name = "host"', 'name = "broken"')
        toml = re.sub(r"(?m)^tick_hz\s*=.*$", 'tick_hz = "fast"', toml)
    path.write_text(toml)
    monkeypatch.setenv("TABULA_ROOT", str(root))
    with pytest.raises(BoardError) as e:
        load_board("broken")
    _single_line(e.value, words, "board.toml")


# ---- 3: degenerate data ----------------------------------------------------------------------------------

@pytest.mark.parametrize("calib,words", [
    (np.zeros((8, 1, 6, 6), np.float32), r"every value is 0.*calibrate on real"),
    (np.ones((8, 1, 6, 6), np.complex64), r"complex"),
    (np.full((8, 1, 6, 6), np.nan, np.float32), r"NaN or Inf"),
    (np.concatenate([np.random.rand(7, 1, 6, 6), np.full((1, 1, 6, 6), np.inf)]).astype(np.float32), r"sample 7.*NaN or Inf"),
    (torch.full((8, 1, 6, 6), 3.0), r"every value is 3"),
])
def test_degenerate_calibration_through_the_api(calib, words):
    with pytest.raises(QuantizationError) as e:
        tabula.quantize(_Tiny().eval(), (torch.zeros(1, 1, 6, 6),), calib)
    _single_line(e.value, words)


def test_all_zero_calibration_through_the_cli(tiny, tmp_path, capsys):
    np.savez(tmp_path / "zero.npz", x=np.zeros((8, 1, 6, 6), np.float32))
    rc = cli_main(["quantize", "--model", str(tiny / "tiny.pt2"), "--calib", str(tmp_path / "zero.npz"),
                   "--out", str(tmp_path / "o")])
    _one_line_error(capsys, rc, r"every value is 0")
    assert not (tmp_path / "o" / "ir.json").exists()


@pytest.mark.parametrize("x,words", [
    (np.full((1, 1, 6, 6), np.nan, np.float32), r"NaN/Inf"),
    (np.ones((1, 1, 6, 6), np.complex64), r"complex"),
])
def test_program_run_refuses_inputs_without_a_code(tiny, x, words):
    with pytest.raises(QuantizationError) as e:
        tabula.load(tiny / "prog").run(x)
    _single_line(e.value, words)


def test_huge_calibration_is_a_warning_in_the_report(tiny, capsys):
    from tabula.report import print_table
    from tabula.stages import data_warnings

    x = np.load(tiny / "calib.npz")["x"]
    # x 1e10: a grid far wider than the test data, still one the integer program holds (x 1e30 is refused)
    program = tabula.lower(tabula.quantize(torch.export.load(str(tiny / "tiny.pt2")), (torch.from_numpy(x[:1]),),
                                           x * 1e10))
    ints = [program.quantize_inputs(x[i : i + 1]) for i in range(6)]
    w = data_warnings(program, ints, 12.0, "m.pt2")
    assert len(w) == 1 and "only 1 integer code" in w[0] and "calibrate on inputs like the test data" in w[0]
    good = tabula.load(tiny / "prog")
    assert data_warnings(good, [good.quantize_inputs(x[i : i + 1]) for i in range(6)], 30.0, "m.pt2") == []
    sat = data_warnings(good, [good.quantize_inputs(x[i : i + 1] * 100) for i in range(6)], 30.0, "m.pt2")
    assert "saturate the input grid" in sat[0]
    sat = data_warnings(good, [good.quantize_inputs(x[i : i + 1] * 100) for i in range(6)], 30.0, "m.pt2", [x[:6] * 100])
    assert "saturate the input grid" in sat[0]
    # values exactly at the grid's ends (black pixels at 0 on a [0, 1] grid) are not clipped: no warning
    t = good.graph.tensors[good.graph.inputs[0]]
    lo, hi = t.qrange or (-128, 127)
    k = np.arange(x[:6].size).reshape(x[:6].shape) % 3  # two thirds at the ends, a third inside
    edges = np.where(k == 0, (lo - t.zero_point) * t.scale,
                     np.where(k == 1, (hi - t.zero_point) * t.scale, x[:6])).astype(np.float32)
    ints = [good.quantize_inputs(edges[i : i + 1]) for i in range(6)]
    assert data_warnings(good, ints, 30.0, "m.pt2", [edges]) == []
    print_table({"board": "host", "warnings": w})
    assert "warning: input 'x' takes only 1 integer code" in capsys.readouterr().out


@pytest.mark.parametrize("y,words", [
    (np.array([0.5, 1, 2, 0, 1, 2]), r"fractional floats"),
    (np.array([0, -1, 2, 0, 1, 2]), r"label -1 is negative"),
    (np.array([0, 1, 7, 0, 1, 2]), r"label 7 is not a class of the model's 3 outputs"),
    (np.array(["a", "b", "c", "a", "b", "c"]), r"dtype <U1"),
])
def test_bad_labels_are_refused_before_the_run(tiny, tmp_path, capsys, y, words):
    x = np.load(tiny / "test.npz")["x"]
    np.savez(tmp_path / "t.npz", x=x, y=y)
    rc = cli_main(["run", "--board", "host", "--elf", str(tmp_path / "no-firmware"), "--ir", str(tiny / "prog"),
                   "--data", str(tmp_path / "t.npz"), "--model", str(tiny / "tiny.pt2"), "--out", str(tmp_path / "o")])
    _one_line_error(capsys, rc, words)
    assert not (tmp_path / "o" / "results.json").exists()


def test_float_labels_that_are_whole_numbers_are_accepted(tiny, tmp_path):
    from tabula.stages import _load_npz_x

    np.savez(tmp_path / "t.npz", x=np.zeros((2, 1, 6, 6), np.float32), y=np.array([1.0, 2.0]))
    _, y = _load_npz_x(tmp_path / "t.npz", "test data")
    assert y.dtype == np.int64 and list(y) == [1, 2]


# ---- 4: arguments ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,words", [
    (["run", "--limit", "-1"], r"limit -1 must be a whole number >= 0"),
    (["run", "--runner", "teleport"], r"unknown runner 'teleport'"),
    (["validate", "--timeout", "-5"], r"timeout -5\.0 must be a number of seconds > 0"),
    (["validate", "--timeout", "0"], r"timeout 0\.0"),
    (["validate", "--limit", "-1"], r"limit -1"),
    (["validate", "--runner", "fvp"], r"runner fvp cannot run host's firmware.*names host"),
    (["validate", "--port", "/dev/ttyACM0"], r"port \(/dev/ttyACM0\) is for a real board.*host runs on host"),
    (["validate", "--name", "../../x"], r"--name '\.\./\.\./x' is not a plain folder name \(it holds '/'\)"),
    (["validate", "--board", "nosuchboard"], r"unknown board 'nosuchboard'"),
])
def test_bad_arguments_are_refused_before_anything_builds(tiny, tmp_path, capsys, argv, words):
    cmd, *rest = argv
    if cmd == "run":
        base = ["run", "--board", "host", "--elf", str(tmp_path / "fw"), "--ir", str(tiny / "prog"), "--data",
                str(tiny / "test.npz"), "--model", str(tiny / "tiny.pt2"), "--out", str(tmp_path / "o")]
    else:
        base = ["validate", "--board", "host", "--model", str(tiny / "tiny.pt2"), "--data", str(tiny / "test.npz"),
                "--build-dir", str(tmp_path / "b")]
        if "--board" in rest:
            base = base[:2] + base[4:]
    _one_line_error(capsys, cli_main(base + rest), words)
    assert not (tmp_path / "b").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize("arg,words", [
    ("limit=-1", r"limit=-1 must be a whole number >= 0"),
    ("port=/dev/ttyACM0", r"port=/dev/ttyACM0 is for a real board"),
    ("name=../../x", r"name='\.\./\.\./x' is not a plain folder name \(it holds '/'\)"),
    ("data=/nonexistent/test.npz", r"data=/nonexistent/test\.npz not found"),
])
def test_bad_scons_arguments_are_refused(tiny, tmp_path, arg, words):
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host", f"build_dir={tmp_path / 'b'}",
                        f"model={tiny / 'tiny.pt2'}", f"calib={tiny / 'calib.npz'}", arg], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and re.search(words, p.stderr), p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    assert not (tmp_path / "b").exists() and not (tmp_path.parent / "x").exists()


def _fake_elf(path: Path, machine: int) -> Path:
    head = bytearray(64)
    head[:4], head[4], head[5] = b"\x7fELF", 1, 1
    head[18:20] = machine.to_bytes(2, "little")
    path.write_bytes(bytes(head))
    path.chmod(0o755)
    return path


def test_arm_firmware_on_the_host_runner_names_the_fix(tmp_path):
    from tabula.deploy.runners import get_runner

    elf = _fake_elf(tmp_path / "firmware.elf", 40)
    with pytest.raises(RunnerError) as e:
        with get_runner("host")(tmp_path / "log").start(elf):
            pass
    _single_line(e.value, r"built for Arm \(32-bit\), not this machine", "board=host")


def test_a_host_program_on_qemu_names_the_fix(tmp_path):
    from tabula.deploy.runners import get_runner
    from tabula.deploy.runners._process import elf_machine

    exe = Path(shutil.which("true") or "/bin/true").resolve()
    if elf_machine(exe) in (None, 40):
        pytest.skip("this machine's /bin/true is not a non-Arm ELF")
    if shutil.which("qemu-system-arm") is None:
        pytest.skip("qemu-system-arm not found")
    with pytest.raises(RunnerError) as e:
        with get_runner("qemu")(tmp_path / "log").start(exe):
            pass
    _single_line(e.value, r"qemu runner: .* program, not Arm firmware", "board=corstone300")


# ---- 8: install: every extra README names exists and works ----------------------------------------------

def test_every_extra_readme_names_is_defined():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = set()
    for text in [(ROOT / "README.md").read_text(), (ROOT / "bootstrap.sh").read_text()]:
        for group in re.findall(r"\.\[([a-z0-9_,-]+)\]", text):
            named.update(group.split(","))
    assert {"board", "test", "mlperf"} <= named
    assert named <= set(extras), f"named in README/bootstrap.sh but not in pyproject.toml: {named - set(extras)}"


def test_bootstrap_installs_the_board_extra():
    boot = (ROOT / "bootstrap.sh").read_text()
    assert re.search(r"pip install .*-e '\.\[[a-z,]*board[a-z,]*\]'", boot)
    assert "pyocd" in " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                               ["optional-dependencies"]["board"])


def test_the_board_extra_imports():
    import cmsis_pack_manager  # noqa: F401
    import pyocd  # noqa: F401


# ---- 5, 7, 9: paths with spaces and unicode, parallel builds, byte-reproducible output --------------------

def _checkout_copy(dest: Path) -> Path:
    """This checkout's files (tracked and new, not ignored; as they are in the work tree) at ``dest``."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout
    for rel in files.decode().split("\0"):
        if rel and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def _scons_in(root: Path, *args):
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root / "python")}, timeout=900)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.arm
@pytest.mark.host
def test_same_commit_gives_the_same_bytes_anywhere_and_boards_build_side_by_side(tiny, tmp_path):
    """Two checkouts at different paths (one with a space and a non-ASCII letter) build the same
    model: firmware.elf, model.c, ir.json and ir.npz are byte-identical.  In the first, two boards
    build at once: each keeps its SCons database under build/<board>/, nothing is written outside
    build/."""
    a = _checkout_copy(tmp_path / "a")
    b = _checkout_copy(tmp_path / "the other checkout ü" / "b")
    before = {p for p in a.rglob("*") if "__pycache__" not in p.parts}
    common = [f"model={tiny / 'tiny.pt2'}", f"calib={tiny / 'calib.npz'}", "run=0", "name=tiny"]
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda board: _scons_in(a, f"board={board}", *common), ["corstone300", "host"]))
    for p in runs:
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    p = _scons_in(b, "board=corstone300", *common)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    for rel in ["firmware.elf", "src/model.c", "src/model.h", "ir.json", "ir.npz"]:
        fa, fb = a / "build/corstone300/tiny" / rel, b / "build/corstone300/tiny" / rel
        assert _sha(fa) == _sha(fb), rel
    elf = (a / "build/corstone300/tiny/firmware.elf").read_bytes()
    assert str(a).encode() not in elf and str(tmp_path).encode() not in elf
    for board in ("corstone300", "host"):
        assert (a / "build" / board / ".sconsign.dblite").is_file()
    assert (a / "build/host/tiny/firmware").is_file()
    after = {p for p in a.rglob("*") if "__pycache__" not in p.parts and "build" not in p.relative_to(a).parts}
    assert after == before - {p for p in before if "build" in p.relative_to(a).parts}, after ^ before
    # nothing changed: SCons (with its database beside the build) rebuilds nothing
    q = _scons_in(a, "-q", "board=corstone300", *common)
    assert q.returncode == 0, q.stdout[-2000:] + q.stderr[-2000:]


def test_float_model_of_another_network_is_refused_or_warned(tiny, tmp_path, monkeypatch):
    """Runs on a stand-in device that echoes the reference outputs (the float comparison is what is
    tested): a model with other outputs is refused before anything runs; one with other weights gives
    a warning printed in the report."""
    from tabula import stages

    prog = tabula.load(tiny / "prog")

    from tabula.deploy.session import SessionResult

    def echo(elf, board, payloads, **k):
        ins = [np.frombuffer(p, np.int8).reshape(prog.graph.tensors["x"].shape) for p in payloads]
        return SessionResult(outputs=[[o.tobytes() for o in prog.run_int(i)] for i in ins], ticks=[1] * len(ins),
                             exit_code=0)

    import tabula.deploy as deploy

    monkeypatch.setattr(deploy, "run_on_board", echo)
    fw = Path(shutil.copy(shutil.which("true") or "/bin/true", tmp_path / "fw"))  # any ELF: its sizes are read
    with pytest.raises(StageError) as e:
        stages.run_and_report(fw, "host", tiny / "prog", tiny / "test.npz", tiny / "wide.pt2", tmp_path / "o1")
    _single_line(e.value, r"wide\.pt2 gives outputs of shape \(5,\).*\(3,\)", "give the .pt2 that was quantized")
    assert not (tmp_path / "o1" / "results.json").exists()
    res = stages.run_and_report(fw, "host", tiny / "prog", tiny / "test.npz", tiny / "other.pt2", tmp_path / "o2")
    assert res["bit_exact_mismatches"] == 0 and res["sqnr_db_vs_float"] < 0
    assert any("SQNR vs float is" in w and "other.pt2" in w for w in res["warnings"])
    assert json.loads((tmp_path / "o2" / "results.json").read_text())["warnings"] == res["warnings"]


def test_a_model_exported_with_batch_4_is_refused_before_quantizing(tiny, tmp_path):
    """The device runs one sample per inference: a .pt2 exported with batch 4 used to get through
    quantize, codegen and compile and then fail on the input shape; it stops first, naming the fix."""
    from tabula.errors import StageError
    from tabula.stages import quantize_and_lower

    x = torch.from_numpy(np.load(tiny / "calib.npz")["x"])
    torch.export.save(torch.export.export(_Tiny().eval(), (x[:4],)), tmp_path / "b4.pt2")
    with pytest.raises(StageError) as e:
        quantize_and_lower(tmp_path / "b4.pt2", tiny / "calib.npz", tmp_path / "out")
    _single_line(e.value, "exported with batch 4", r"x\[:1\]")
    assert not (tmp_path / "out" / "ir.json").exists()


def test_program_run_names_the_shape_the_user_gave(tiny):
    with pytest.raises(ValueError) as e:
        tabula.load(tiny / "prog").run(np.zeros((1, 6, 6), np.float32))
    _single_line(e.value, r"\(1, 6, 6\)", r"\(1, 1, 6, 6\)", "batch")


# ---- issue 20 -------------------------------------------------------------------------------------------
# 1: no shell ever reads user text.  Each metacharacter in each of name=, build_dir=, model=, calib=, data=
# is built correctly or refused in one line, and the command it would inject never runs (a marker file).
# Cheap: the refused cases stop before anything compiles (one SCons start each); the carried ones share
# one host build whose build_dir, model, calib and data paths hold them all (each component or file name
# one payload per character, so no quote of one masks another).

MARKER = f"tabula-injected-{os.getpid()}"
METACHARS = {"backtick": "`", "dollar": "$", "dollar-paren": "$(", "semicolon": ";", "quote": "'",
             "double-quote": '"', "newline": "\n"}
PAYLOADS = {"backtick": f"m`touch {MARKER}`x", "dollar": f"m${MARKER}x", "dollar-paren": f"m$(touch {MARKER})x",
            "semicolon": f"m;touch {MARKER};x", "quote": f"m'touch {MARKER}'x",
            "double-quote": f'm"touch {MARKER}"x', "newline": f"m\ntouch {MARKER}\nx"}
#: (option, character) pairs SCons refuses up front: every name= but a plain folder name, and what SCons
#: cannot carry in a build folder ('$' expands as a variable, a newline splits its lines).
REFUSED = {("name", c) for c in METACHARS} | {("build_dir", c) for c in ("dollar", "dollar-paren", "newline")}
CARRIED_IN_BUILD_DIR = [c for c in METACHARS if ("build_dir", c) not in REFUSED]


def _markers(*dirs: Path) -> list[Path]:
    return [d / MARKER for d in (ROOT, Path.cwd(), *dirs) if (d / MARKER).exists()]


def _scons_host(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def metachar_build(tiny, tmp_path_factory):
    """One host build (run=1) whose every path holds the characters SCons can carry: build_dir nested
    one component per character, model/calib/data each named with all seven payloads."""
    base = tmp_path_factory.mktemp("meta")
    build_dir = base.joinpath(*[PAYLOADS[c] for c in CARRIED_IN_BUILD_DIR])
    files = base / "files"
    files.mkdir()
    every = "".join(PAYLOADS.values())
    model, calib, data = files / f"{every}.pt2", files / f"c{every}.npz", files / f"d{every}.npz"
    shutil.copy(tiny / "tiny.pt2", model)
    shutil.copy(tiny / "calib.npz", calib)
    x = np.load(tiny / "calib.npz")["x"]
    np.savez(data, x=x[:5])   # 5 samples: only this file has that many
    p = _scons_host(f"build_dir={build_dir}", f"model={model}", f"calib={calib}", f"data={data}")
    leaked = _markers(base, files, build_dir)
    for m in leaked:
        m.unlink()
    # name= defaults to the model's file name made a plain folder name: each other character becomes '_'
    out = build_dir / "host" / re.sub(r"[^\w.+-]", "_", model.stem).lstrip(".-")
    return p, out, {"build_dir": build_dir, "model": model, "calib": calib, "data": data}, leaked


@pytest.mark.host
@pytest.mark.parametrize("char", sorted(METACHARS))
@pytest.mark.parametrize("option", ["name", "build_dir", "model", "calib", "data"])
def test_metacharacters_are_built_correctly_or_refused_in_one_line(tiny, tmp_path, metachar_build, option, char):
    if (option, char) in REFUSED:
        args = {"build_dir": str(tmp_path / "b"), "model": str(tiny / "tiny.pt2"), "calib": str(tiny / "calib.npz")}
        args[option] = PAYLOADS[char] if option == "name" else str(tmp_path / PAYLOADS[char])
        p = _scons_host(*[f"{k}={v}" for k, v in args.items()], "run=0")
        leaked = _markers(tmp_path)
        for m in leaked:
            m.unlink()
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("scons: "), p.stdout + p.stderr
        why = "is not a plain folder name" if option == "name" else "SCons cannot carry"
        assert why in lines[0] and repr(METACHARS[char])[1:-1].strip("'") in lines[0], lines[0]
        assert "Traceback" not in p.stdout + p.stderr and not leaked
        assert not (tmp_path / "b").exists() and not list(tmp_path.glob("m*"))
        return
    p, out, paths, leaked = metachar_build
    assert METACHARS[char] in str(paths[option])
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    assert not leaked, leaked
    r = json.loads((out / "results.json").read_text())
    assert r["n_samples"] == r["n_outputs_received"] == 5 and r["bit_exact_mismatches"] == 0   # data= was read
    assert (out / "ir.json").is_file() and (out / "firmware").is_file()                          # model=, calib=
    assert out.parent.parent == paths["build_dir"]                                              # build_dir= as given


# 2: a killed build leaves no emulator

def _qemu_running(elf: Path) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and argv and argv[0].endswith(b"qemu-system-arm") and str(elf).encode() in argv:
            found.append(int(d.name))
    return found


@pytest.mark.qemu
@pytest.mark.parametrize("kill", ["process group", "scons only"])
def test_a_killed_build_leaves_no_emulator(digits_m55_build, kill):
    """``scons board=corstone300`` is killed (SIGKILL) while QEMU runs the firmware: its whole process
    group, or only the SCons process.  QEMU (started in its own session, so a group kill never reaches
    it) must end with the tabula process that started it -- before, it ran on for minutes at 84 % CPU."""
    import signal

    b = digits_m55_build
    p = subprocess.Popen([sys.executable, "-m", "SCons", "-Q", "board=corstone300", f"build_dir={b.build_dir}",
                          *b.args, f"limit={360 if kill == 'scons only' else 359}"], cwd=ROOT, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time_now() + 180
        while not _qemu_running(b.elf) and p.poll() is None and time_now() < deadline:
            sleep(0.02)
        assert _qemu_running(b.elf), "QEMU never started"
    finally:
        if kill == "process group":
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.kill()
        p.wait()
    deadline = time_now() + 10
    while _qemu_running(b.elf) and time_now() < deadline:
        sleep(0.05)
    left = _qemu_running(b.elf)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"QEMU {left} outlived the killed build"


def time_now() -> float:
    import time

    return time.monotonic()


def sleep(s: float) -> None:
    import time

    time.sleep(s)


# 3: no debug probe: one line within seconds, naming the probe, the board's target and probe=

@pytest.mark.arm
def test_no_probe_is_one_line_within_10_s(tmp_path):
    """pyocd is installed and no probe is attached: ``tabula validate`` on a real board says so before
    building anything (it used to build, then wait 180 s for pyocd)."""
    import time

    if shutil.which("pyocd") is None:
        pytest.skip("pyocd not installed: pip install -e '.[board]'")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "validate", "--board", "nucleo_h743zi", "--build-dir",
                        str(tmp_path / "b")], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    took = time.monotonic() - t0
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert took < 10 and p.returncode == 2 and len(lines) == 1, (took, p.stderr)
    assert re.search(r"no debug probe connected for nucleo_h743zi \(pyocd target stm32h743xx\): plug in the "
                     r"on-board ST-LINK .* or name one with probe=<unique id>", lines[0]), lines[0]
    assert not (tmp_path / "b").exists()                     # nothing was built
    t0 = time.monotonic()                                    # the runner itself, as scons' run stage meets it
    with pytest.raises(RunnerError) as e:
        tabula.deploy.run_on_board(_fake_elf(tmp_path / "fw.elf", 40), "nucleo_h743zi", [b"x"], probe="066DFF")
    _single_line(e.value, r"debug probe '066DFF' for nucleo_h743zi \(pyocd target stm32h743xx\) not found")
    assert time.monotonic() - t0 < 10


# 4: degenerate data, filesystem errors

@pytest.mark.parametrize("factor,words", ids=["x1e30", "x1e20"], argvalues=[
    (1e30, r"calibration input 0 spans \[-\d\.\d+e\+30, \d\.\d+e\+30\]: the grid of the model input x spans .* beyond 2\^64"),
    (1e20, r"calibration input 0 spans \[.*e\+20\].*beyond 2\^64"),
])
def test_a_calibration_beyond_float32_is_refused_through_the_api(tiny, factor, words):
    x = torch.from_numpy(np.load(tiny / "calib.npz")["x"])
    with pytest.raises(QuantizationError) as e:
        tabula.quantize(torch.export.load(str(tiny / "tiny.pt2")), (x[:1],), x * factor)
    _single_line(e.value, words, "units the model was trained on")


class _SiluConv(nn.Module):   # digits' pattern: conv -> silu -> conv
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 2, 3, padding=1), nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        return torch.tanh(self.c2(nn.functional.silu(self.c1(x))))


def test_a_calibration_whose_rescale_no_multiplier_holds_is_refused():
    """Images x 1e15: within float32, but the second conv's rescale factor is about 1e-22, below 2^-63
    (its multiplier rounds to 0); lowering said only "multiplier [0]" (digits: the same), now quantize
    names the input and its range."""
    torch.manual_seed(0)
    x = torch.rand(100, 1, 6, 6)   # 100 inputs: the histogram grids (with fewer this one still lowers)
    with pytest.raises(QuantizationError) as e:
        tabula.quantize(_SiluConv().eval(), (x[:1],), x * 1e15)
    _single_line(e.value, r"calibration input 0 spans \[\S+, 1e\+15\]: conv2d_1 \(test_bad_inputs\.py:\d+ node "
                          r"conv2d_1\) would rescale by \d\.\d+e-2\d .* below 2\^-63: its 32-bit multiplier would be 0")


def test_a_calibration_beyond_float32_is_refused_through_the_cli(tiny, tmp_path, capsys):
    np.savez(tmp_path / "huge.npz", x=np.load(tiny / "calib.npz")["x"] * 1e30)
    rc = cli_main(["quantize", "--model", str(tiny / "tiny.pt2"), "--calib", str(tmp_path / "huge.npz"),
                   "--out", str(tmp_path / "o")])
    _one_line_error(capsys, rc, r"calibration input 0 spans \[.*e\+30\]", "beyond 2\\^64")
    assert not (tmp_path / "o" / "ir.json").exists()


@pytest.mark.parametrize("shape", [(8, 1, 5, 5), (8, 6, 6), (8, 1, 6, 6, 1)])
def test_a_wrongly_shaped_calibration_names_the_expected_shape(shape):
    with pytest.raises(QuantizationError) as e:
        tabula.quantize(_Tiny().eval(), (torch.zeros(1, 1, 6, 6),), torch.rand(shape))
    _single_line(e.value, rf"shape \(1, {', '.join(map(str, shape[1:]))}\), but the model takes \(1, 1, 6, 6\)",
                 r"give calibration of shape \[n, 1, 6, 6\]")


@pytest.mark.parametrize("where,words", ids=["under-a-file", "proc"], argvalues=[
    ("under a file", r"cannot create the build folder .*: .*tiny\.pt2 is a file, not a folder; choose a writable folder with build_dir="),
    ("/proc", r"cannot create the build folder /proc/tabula-\w+/host: /proc does not take new folders"),
])
def test_scons_build_dir_that_cannot_be_made_is_one_line(tiny, where, words):
    build_dir = tiny / "tiny.pt2" / "b" if where == "under a file" else Path(f"/proc/tabula-{os.getpid()}")
    p = _scons_host(f"build_dir={build_dir}", f"model={tiny / 'tiny.pt2'}", f"calib={tiny / 'calib.npz'}", "run=0")
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and re.search(words, lines[0]), p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr


@pytest.mark.parametrize("cmd", ["quantize", "codegen"])
def test_an_output_folder_in_proc_is_one_line(tiny, capsys, cmd):
    argv = (["quantize", "--model", str(tiny / "tiny.pt2"), "--calib", str(tiny / "calib.npz")] if cmd == "quantize"
            else ["codegen", "--ir", str(tiny / "prog")])
    rc = cli_main(argv + ["--out", "/proc/tabula-x/out"])
    _one_line_error(capsys, rc, r"cannot create the output folder /proc/tabula-x/out: /proc does not take new "
                                r"folders .*; choose a writable folder with --out")


@pytest.mark.parametrize("saved", ["module", "state_dict"])
def test_a_torch_save_file_is_named_with_the_fix(tiny, tmp_path, capsys, saved):
    m = _Tiny().eval()
    torch.save(m if saved == "module" else m.state_dict(), tmp_path / "m.pt2")
    rc = cli_main(["quantize", "--model", str(tmp_path / "m.pt2"), "--calib", str(tiny / "calib.npz"),
                   "--out", str(tmp_path / "o")])
    err = _one_line_error(capsys, rc, r"m\.pt2 was written by torch\.save \(a pickled module or state_dict\), not by "
                                      r"torch\.export\.save", r"export it with torch\.export\.save\(torch\.export\.export\(")
    assert "warnings above" not in err


def test_validate_names_the_failing_stage_from_the_status_file(tiny, tmp_path, capsys):
    """``tabula validate`` reads what the stages recorded (tabula.status), not SCons's stderr: the
    quantize stage's own line, once."""
    torch.save(_Tiny().eval(), tmp_path / "saved.pt2")
    rc = cli_main(["validate", "--board", "host", "--model", str(tmp_path / "saved.pt2"), "--data",
                   str(tiny / "test.npz"), "--build-dir", str(tmp_path / "b")])
    _one_line_error(capsys, rc, r"^tabula: error: build failed: \S*saved\.pt2 was written by torch\.save")


# 5: show escapes and checks; one build per build_dir at a time; byte-stable JSON

def test_show_escapes_control_characters(tmp_path, capsys):
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"board": "host\x1b[2J\x1b[31mred", "warnings": ["a\x1b]0;title\x07b\nc"],
                             "memory": [{"region": "itcm\r", "constants": 1}]}))
    assert cli_main(["show", str(p)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "host\\x1b[2J\\x1b[31mred" in out and "a\\x1b]0;title\\x07b\\nc" in out and "memory itcm\\r" in out


@pytest.mark.parametrize("content,words", [
    ("[" * 100_000 + "]" * 100_000, r"nested too deeply"),
    ('{"a": ' * 40 + "1" + "}" * 40, r"nested more than 32 levels"),
    (json.dumps({"memory": [{"constants": 1}]}), r"'memory'\[0\] lacks 'region'"),
    (json.dumps({"outputs": [{"index": 0, "shape": [3], "sqnr_db_vs_float": 1.0}]}), r"'outputs'\[0\] lacks 'bit_exact"),
    (json.dumps({"tables": [{"max_lsb": "big", "mean_lsb": 0.1}]}), r"'tables'\[0\]\['max_lsb'\] is str, not a number"),
    (json.dumps({"link": [1]}), r"'link' is a list, not an object"),
    (json.dumps({"warnings": "x"}), r"'warnings' is not a list of text"),
], ids=["100000-deep", "40-deep", "memory-no-region", "outputs-no-mismatches", "tables-text-number", "link-list",
        "warnings-text"])
def test_show_checks_the_structure(tmp_path, capsys, content, words):
    p = tmp_path / "results.json"
    p.write_text(content)
    _one_line_error(capsys, cli_main(["show", str(p)]), words, "run the board again")


def test_a_second_build_of_one_build_dir_stops_with_one_line(tiny, tmp_path):
    """While a build holds build_dir/<board> (here: this test holds its lock), a second SCons stops at
    once with one line instead of running every stage again beside it."""
    from tabula.files import lock_folder

    board_dir = tmp_path / "b" / "host"
    board_dir.mkdir(parents=True)
    fd = lock_folder(board_dir, "the first build")
    try:
        p = _scons_host(f"build_dir={tmp_path / 'b'}", f"model={tiny / 'tiny.pt2'}", f"calib={tiny / 'calib.npz'}",
                        "run=0")
    finally:
        os.close(fd)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1, p.stdout + p.stderr
    assert re.search(rf"{re.escape(str(board_dir))} is being built by another process \(pid {os.getpid()}: the "
                     r"first build\); wait for it to finish, or build into another build_dir=", lines[0]), lines[0]
    assert not (board_dir / "tiny").exists()


def test_codegen_json_is_byte_stable(tiny, tmp_path):
    """arena.json under two hash seeds (the arena planner's dicts come out in another order): the same
    bytes, as every JSON the build writes (sorted keys)."""
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        subprocess.run([sys.executable, "-m", "tabula.cli", "codegen", "--ir", str(tiny / "prog"), "--out", str(out),
                        "--board", "host", "--profile"], check=True, capture_output=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        outs.append({f: (out / f).read_bytes() for f in ("arena.json", "profile.json", "model.c")})
    assert outs[0] == outs[1]
