"""The per-layer report (issue 23): report.html read back with an HTML parser (self-contained, one row per IR
op, each layer's SQNR what the Python API computes for it), the digits figures, the model with one bad layer
(``exp`` over [-8, 8] in int8, through ``tabula analyze`` on a terminal: its progress bars), a16w8 whose
error is its int8 weights', and the warnings that need a run (layout, retry timer)."""
from __future__ import annotations

import json
import os
import re
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
import torch

import tabula
from helpers import load_example, pty_run
from tabula.report import sqnr_db
from tabula.report.analysis import build_report, from_build
from tabula.report.float_model import FloatModel
from tabula.report.stage import analyze_layers, build_folder_report, calibration_data
from tabula.stages import generate_sources


class _Page(HTMLParser):
    """Every tag and attribute of a page; the layer rows (``tr.layer``) with their cells."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.rows: list[dict] = []
        self._row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "tr" and "layer" in (a.get("class") or "").split():
            self._row = {"attrs": a, "cells": []}
        elif tag == "td" and self._row is not None:
            self._row["cells"].append("")

    def handle_data(self, data):
        if self._row is not None and self._row["cells"]:
            self._row["cells"][-1] += data

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None


def _float_values(ep, example, x, names):
    """The float graph's node values per sample, computed here with a plain FX interpreter (not the
    report's code): node name -> [n, ...]."""
    from torch.fx import Interpreter

    from tabula.quantizer import float_graph

    gm = float_graph(ep, example)
    out = {n: [] for n in names}

    class Keep(Interpreter):
        def run_node(self, node):
            v = super().run_node(node)
            if node.name in out:
                out[node.name].append(v.detach().double().numpy())
            return v

    with torch.no_grad():
        for i in range(len(x)):
            Keep(gm).run(torch.from_numpy(x[i : i + 1]))
    return {k: np.concatenate(v) for k, v in out.items() if v}


@pytest.fixture(scope="module")
def digits_report(digits_dir, digits_quantized, digits_program, tmp_path_factory):
    """The digits program's build folder as SCons leaves it (IR, calibration.json, layers.json over the first
    120 test samples, src/ for corstone300) and its report."""
    from tabula.files import write_json
    from tabula.report.tables import table_report

    out = tmp_path_factory.mktemp("digits_report")
    ep = torch.export.load(str(digits_dir / "model.pt2"))
    _, example, x, _ = digits_quantized
    x = x[:120]
    calib = np.load(digits_dir / "calib.npz")["x"][:400]
    digits_program.save(out)
    write_json(out / "tables.json", {"tables": table_report(digits_program.graph)})
    fm = FloatModel(ep, example)
    write_json(out / "calibration.json", {"tensors": calibration_data(digits_program, fm, calib)})
    write_json(out / "layers.json", analyze_layers(digits_program, fm, x))
    generate_sources(out, out / "src", "digits", "corstone300")
    rep, paths = build_folder_report(out, "corstone300")
    return out, rep, paths, ep, example, x


def test_report_html_is_self_contained_one_row_per_ir_op_and_its_sqnr_is_the_apis(digits_report, digits_program):
    out, rep, paths, ep, example, x = digits_report
    text = (out / "report.html").read_text()
    page = _Page()
    page.feed(text)
    g = digits_program.graph
    # self-contained: no script, no stylesheet link, every image inline, no address outside the file
    assert not any(t in ("script", "link", "iframe", "object") for t, _ in page.tags)
    urls = [v for _, a in page.tags for k, v in a.items() if k in ("src", "href", "action", "data") and v]
    assert urls and all(u.startswith("data:image/png;base64,") for u in urls)
    assert not re.search(r"(https?:|ftp:)?//[a-z0-9]", re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", text), re.I)
    # one row per IR op, in order
    assert [int(r["attrs"]["data-op"]) for r in page.rows] == list(range(len(g.ops)))
    assert [r["attrs"]["data-tensor"] for r in page.rows] == [op.outputs[0] for op in g.ops]
    # each layer's SQNR: what tabula.report.sqnr_db gives for its dequantized reference output against the
    # float node it is named after, over the samples
    from tabula.reference.interpreter import run_graph

    traces = []
    for i in range(len(x)):
        tr = {}
        run_graph(g, digits_program.quantize_inputs(x[i : i + 1]), trace=tr)
        traces.append(tr)
    names = [r["attrs"]["data-tensor"] for r in page.rows if r["attrs"]["data-sqnr"]]
    assert set(names) == {"conv2d", "silu", "max_pool2d", "conv2d_1", "tanh", "max_pool2d_1", "flatten", "linear"}
    floats = _float_values(ep, example, x, names)
    for r in page.rows:
        name, shown = r["attrs"]["data-tensor"], r["attrs"]["data-sqnr"]
        if not shown:
            continue
        t = g.tensors[name]
        f = floats[name]
        f = f.transpose(0, 2, 3, 1) if f.ndim == 4 else f
        dq = np.concatenate([(tr[name].astype(np.float64) - t.zero_point) * t.scale for tr in traces])
        assert float(shown) == sqnr_db(f, dq), name
        assert f"{float(shown):.2f}" in r["cells"]
    # the output layer's is the model's: Program.run against the exported model
    with torch.no_grad():
        fo = np.concatenate([ep.module()(torch.from_numpy(x[i : i + 1])).numpy() for i in range(len(x))])
    assert rep["rows"][-1]["sqnr_db"] == sqnr_db(fo, digits_program.run(x)[0]) == pytest.approx(36.1, abs=1.0)


def test_digits_figures(digits_report):
    out, rep, paths, *_ = digits_report
    rows = rep["rows"]
    assert [p.name for p in paths] == ["report.html", "report.md", "report.json"]
    assert json.loads((out / "report.json").read_text())["worst"] == rep["worst"]
    assert rep["model"]["macs"] == 8 * 8 * 8 * 9 + 4 * 4 * 16 * 9 * 8 + 64 * 10 == 23680
    assert rep["model"]["ir_ops"] == 12 and rep["model"]["emitted_ops"] == 9
    # the kernel each IR op ran in: CONV2D + RESCALE in one call, Helium on the M55
    conv, rescale = rows[0], rows[1]
    assert conv["kernel"] == rescale["kernel"] == "tabula_conv2d_s8_folded" and conv["fused"] and not rescale["fused"]
    assert conv["path"] == "Helium" and conv["weight_bytes"] == 8 * 9 + 8 * 4 and conv["engine"] == "CPU"
    assert rows[9]["op"] == "RESHAPE" and rows[8]["kernel"] == "tabula_transpose"
    assert [r["output"] for r in rows if r["worst"]] == ["max_pool2d_1", "flatten", "linear"]
    sq = {r["output"]: r["sqnr_db"] for r in rows if r["sqnr_db"] is not None}
    assert sq["conv2d"] > sq["conv2d_1"] > sq["tanh"] > sq["max_pool2d_1"] > 30
    assert all(40 < r["weight_sqnr_db"] < 51 for r in rows if r["op"] in ("CONV2D", "FULLY_CONNECTED"))
    # every grid is well used; a clean int8 model has no warning
    assert all(r["calibration"]["codes_central"] > 100 for r in rows if r["calibration"])
    assert rep["warnings"] == []
    # the arena timeline: the live bytes never exceed the planned arena
    assert max(t["bytes"] for t in rep["timeline"]) <= rep["model"]["arena_bytes"] == 1024
    assert {t["name"] for t in rep["timeline"][0]["tensors"]} == {"x", "conv2d"}
    md = (out / "report.md").read_text()
    assert md.count("\n| ") >= 12 and "tabula_conv2d_s8_folded" in md


def test_run_warnings_layout_and_timer(digits_program, digits_report):
    """With a run's figures: TRANSPOSE ops over 20 % of the inference are named with the fix; retries the
    retry timer caused (spurious ones, or silences on an undamaged link) are said to be the timer's."""
    out, *_ = digits_report
    ops = json.loads((out / "src" / "ops.json").read_text())["ops"]
    prof = [{"op": o["op"], "instructions": 1000, "ticks": 31.0, "share": 0.05} for o in ops]
    k = next(i for i, o in enumerate(ops) if o["op"] == "TRANSPOSE")
    prof[k]["share"] = 0.35
    res = {"profile": prof, "tick_hz": 32_000_000, "ticks_per_inference": 64_000.0,
           "link": {"spurious_retries": 2, "retries_by_cause": {"silence": 1}, "damaged_detected_by_host": 0,
                    "damaged_detected_by_device": 0}}
    rep = from_build(out, "corstone300", results=res)
    kinds = [w["kind"] for w in rep["warnings"]]
    assert kinds == ["layout", "timer", "timer"]
    layout = rep["warnings"][0]
    assert layout["op"] == 8 and "35%" in layout["text"] and "model.py:28" in layout["text"] and "Conv2d" in layout["text"]
    assert rep["rows"][8]["instructions"] == 1000 and rep["rows"][7]["instructions"] == 1000
    assert "2 request(s)" in rep["warnings"][1]["text"] and "2.0 ms" in rep["warnings"][1]["text"]
    assert "not a link fault" in rep["warnings"][1]["text"] and "retry timer" in rep["warnings"][2]["text"]
    res["link"]["damaged_detected_by_host"] = 1   # a damaged frame: the silence may be the link's
    res["link"]["spurious_retries"] = 0
    assert [w["kind"] for w in from_build(out, "corstone300", results=res)["warnings"]] == ["layout"]


def test_bad_exp_layer_is_found_by_analyze_on_a_terminal(tmp_path):
    """exp calibrated over [-8, 8] in int8: its grid spans under one code where the data lies; tabula analyze
    (run on a terminal: progress bars) finds it as the worst layer, with the codes and SQNR-drop warnings
    naming its source line, and no drop warning for the layer after it."""
    load_example("tests/fixtures/bad_layer_model.py").export_bad_exp(tmp_path)
    env = {**os.environ, "TERM": "xterm", "OMP_NUM_THREADS": "1"}
    env.pop("TABULA_QUIET", None)
    code, shown = pty_run([sys.executable, "-m", "tabula.cli", "analyze", "--model", str(tmp_path / "bad_exp.pt2"),
                            "--calib", str(tmp_path / "calib.npz"), "--data", str(tmp_path / "test.npz"),
                            "--build-dir", str(tmp_path / "build"), "--board", "corstone300"], env)
    assert code == 0, shown[-2000:]
    # progress bars on the terminal: done / total, a rate, then the line cleared
    assert re.search(r"\rcalibration: +\d+%\|.*\| *\d+/48 \[[0-9:]+<[0-9:?]+, *[0-9.?]+ ?sample/s\]", shown), shown[-2000:]
    assert re.search(r"\rper-layer error: .*/16 ", shown)
    out = tmp_path / "build" / "corstone300" / "bad_exp"
    rep = json.loads((out / "report.json").read_text())
    rows = {r["index"]: r for r in rep["rows"]}
    exp = next(r for r in rep["rows"] if r["node"] == "exp")
    assert exp["op"] == "TABLE" and rep["worst"][0] == exp["index"]
    assert exp["sqnr_db"] < 3 and exp["input_sqnr_db"] > 25 and exp["drop_db"] > 25
    assert exp["calibration"]["codes_central"] < 2
    assert exp["calibration"]["min"] < 1e-3 and exp["calibration"]["max"] > 2900  # e^-8 .. e^8
    ws = {(w["kind"], w["op"]) for w in rep["warnings"]}
    assert ws == {("codes", exp["index"]), ("drop", exp["index"])}
    for w in rep["warnings"]:
        assert "bad_layer_model.py:17" in w["text"] and "node exp" in w["text"] and "fix:" in w["text"]
        assert f"tabula: warning: {w['text']}" in shown.replace("\r\n", "\n")
    linear = rows[max(rows)]
    assert linear["node"] == "linear" and (linear["drop_db"] or 0) < 10
    assert "bad_layer_model.py:17" in (out / "report.md").read_text() and (out / "report.html").is_file()


def test_a16w8_whose_error_is_its_int8_weights_is_told(tmp_path):
    """a16w8 on a linear layer whose rows each hold one large weight (the others round to a few int8 codes):
    its output is further from float than an int8 grid would put it; the warning names that layer and its
    weight SQNR."""
    torch.manual_seed(5)
    fc = torch.nn.Linear(32, 8)
    with torch.no_grad():
        fc.weight[:, 0] = 8.0  # per-channel scale 8/127: the other weights (|w| < 0.18) keep 0-3 codes
    model = torch.nn.Sequential(fc).eval()
    x = torch.randn(48, 32)
    ep = torch.export.export(model, (x[:1],))
    program = tabula.lower(tabula.quantize(ep, (x[:1],), x, scheme="a16w8"), (x[:1],))
    fm = FloatModel(ep, (x[:1],))
    lay = analyze_layers(program, fm, x.numpy())   # on the calibration inputs: no value outside a grid
    rep = build_report(program, layers=lay["tensors"], weights=lay["weights"],
                       calibration=calibration_data(program, fm, x.numpy()))
    out = next(r for r in rep["rows"] if r["output"] == program.graph.outputs[0])
    fc_row = next(r for r in rep["rows"] if r["op"] == "FULLY_CONNECTED")
    assert fc_row["weight_sqnr_db"] < out["sqnr_db"] + 3 < 45   # the weights' error is the output's
    w = [w for w in rep["warnings"] if w["kind"] == "a16w8"]
    assert len(w) == 1 and w[0]["op"] == out["index"]
    assert "a16w8 is not better than int8" in w[0]["text"] and f"op {fc_row['index']} FULLY_CONNECTED" in w[0]["text"]
    assert f"weights {fc_row['weight_sqnr_db']:.1f} dB" in w[0]["text"] and "scheme=int8" in w[0]["text"]


def test_test_data_beyond_the_calibration_range_is_named(tmp_path):
    """Test inputs three times the calibration's range: the layers whose grid their float values saturate (more
    than 1 % of the test values outside, none of the calibration values) get a test_clipped warning with the share
    and the range the test data reaches, and their drop warning points at it; on the calibration data itself, none."""
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Linear(8, 4)).eval()
    x = torch.rand(48, 16) * 2 - 1
    ep = torch.export.export(model, (x[:1],))
    program = tabula.lower(tabula.quantize(ep, (x[:1],), x), (x[:1],))
    fm = FloatModel(ep, (x[:1],))
    calib = calibration_data(program, fm, x.numpy())
    same = analyze_layers(program, fm, x.numpy())
    rep = build_report(program, layers=same["tensors"], calibration=calib)
    assert not [w for w in rep["warnings"] if w["kind"] == "test_clipped"]
    wide = 3 * x.numpy()[:16]
    lay = analyze_layers(program, fm, wide)
    rep = build_report(program, layers=lay["tensors"], calibration=calib)
    rows = {r["output"]: r for r in rep["rows"]}
    out = rows[program.graph.outputs[0]]
    t = out["test_range"]
    lo, hi = t["grid"]
    assert t["clipped"] > 0.01 and (t["min"] < lo or t["max"] > hi)
    w = [w for w in rep["warnings"] if w["kind"] == "test_clipped"]
    assert out["output"] in {w["tensor"] for w in w}
    mine = next(w for w in w if w["tensor"] == out["output"])
    assert f"{t['clipped']:.1%} of its test values" in mine["text"] and "calibrate on data like the test data" in mine["text"]
    assert f"{t['max']:.3g}" in mine["text"] or f"{t['min']:.3g}" in mine["text"]


def test_saturating_grids_and_a_coarse_table_are_named(digits_report, digits_program, digits_dir):
    """Inputs three times brighter than the calibration's: the grids they saturate (> 1 % of the values
    outside) are named with the share and the fix; a TABLE whose bound exceeds 1 LSB is named too."""
    out, _, _, ep, example, _ = digits_report
    bright = 3.0 * np.load(digits_dir / "calib.npz")["x"][:32]
    calib = calibration_data(digits_program, FloatModel(ep, example), bright)
    tables = json.loads((out / "tables.json").read_text())["tables"]
    tanh = next(t for t in tables if t["output"] == "tanh")
    tanh["max_lsb"] = 1.6
    rep = build_report(digits_program, calibration=calib, tables=tables)
    clipped = [w for w in rep["warnings"] if w["kind"] == "clipped"]
    assert clipped and {w["tensor"] for w in clipped} <= {t for t, c in calib.items() if c["clipped"] > 0.01}
    first = min(clipped, key=lambda w: w["op"])
    assert first["tensor"] == "conv2d" and "model.py:26" in first["text"] and "observer='minmax'" in first["text"]
    assert f"{calib['conv2d']['clipped']:.1%}" in first["text"]
    table = [w for w in rep["warnings"] if w["kind"] == "table"]
    assert len(table) == 1 and table[0]["tensor"] == "tanh" and "1.60 output LSB" in table[0]["text"]


def test_the_run_stage_figures_equal_the_direct_ones_when_dim_0_is_not_the_batch(tmp_path):
    """float_layers.npz keeps each sample on its own leading axis: a tensor whose first dim is not the batch (a
    TRANSPOSE [1, 6, 8] -> [6, 1, 8], as attention layers make) is compared sample by sample, not joined along
    its own first dim (which read other samples' values as this one's: -24 dB on kws_transformer)."""
    from tabula.reference.interpreter import run_graph
    from tabula.report.stage import float_layers_file, float_model, layers_from_run, read_float_layers

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)).transpose(0, 1))

    torch.manual_seed(0)
    m, x = M().eval(), torch.randn(12, 6, 8)
    program = tabula.lower(tabula.quantize(m, (x[:1],), [(c[None],) for c in x]))
    # transpose(0, 1) of [1, 6, 8] keeps the element order: the layout pass makes it a RESHAPE to [6, 1, 8]
    assert any(op.op in ("TRANSPOSE", "RESHAPE") and program.graph.tensors[op.outputs[0]].shape[0] != 1
               for op in program.graph.ops)
    ep = torch.export.export(m, (x[:1],))
    xs = x.numpy()
    float_layers_file(program, ep, xs, tmp_path / "float_layers.npz")
    stored = read_float_layers(tmp_path / "float_layers.npz")
    traces = [{} for _ in range(stored["n"])]
    for i, tr in enumerate(traces):
        run_graph(program.graph, program.quantize_inputs(xs[i : i + 1]), trace=tr)
    via_file = layers_from_run(program, stored, traces)["tensors"]
    direct = analyze_layers(program, float_model(ep, xs), xs, limit=stored["n"])["tensors"]
    transposed = [op.outputs[0] for op in program.graph.ops if op.op in ("TRANSPOSE", "RESHAPE")
                  and op.outputs[0] in direct and program.graph.tensors[op.outputs[0]].shape[0] != 1]
    assert transposed and all(t in via_file for t in transposed)
    for t, fig in direct.items():
        assert via_file[t]["sqnr_db"] == fig["sqnr_db"], t
    assert min(via_file[t]["sqnr_db"] for t in transposed) > 25
