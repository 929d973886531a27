"""benchmarks/op_coverage.py: ExecuTorch 1.5.1's TOSA INT ops (benchmarks/executorch_tosa_int_ops.toml) against
tabula's rules, and one op built and run on the host firmware, int8 and a16w8."""
from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "benchmarks"))  # last: benchmarks/coverage.py must not hide the coverage package

import op_coverage  # noqa: E402

from tabula import rules  # noqa: E402


def test_the_data_is_executorch_1_5_1s_list_and_every_op_has_a_model():
    data = tomllib.loads(op_coverage.OPS_FILE.read_text())
    assert data["source"] == {"package": "executorch", "version": "1.5.1",
                              "commit": "3b60683923245cf472b7323426920e15623ba361"}
    ops = op_coverage.executorch_ops()
    assert sum(w == "support list" for w in ops.values()) == 108
    assert len(ops) == 108 + 21 + 31
    assert "aten.convolution.default" in ops and ops["aten.softmax.int"] == "decompose_softmax_pass.py"
    assert set(ops) <= set(op_coverage.CASES) and not set(op_coverage.EXTRA) & set(ops)


def test_listing_counts_the_ops_tabulas_rules_and_lowerings_take(tmp_path):
    out = tmp_path / "coverage.json"
    assert op_coverage.main(["--no-build", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    ops = op_coverage.executorch_ops()
    rows = {r["op"]: r for r in data["rows"]}
    assert set(ops) | set(op_coverage.EXTRA) == set(rows) and data["total"] == len(ops)
    # the figure is the count of ExecuTorch ops whose every graph op has a rule (or is rewritten / removed) and
    # that no lowering refuses
    from tabula.quantizer.annotator import supported

    ok = set(supported()) | rules.IDENTITY
    by_rules = [op for op in ops if rows[op]["graph"] is not None and all(g in ok for g in rows[op]["graph"])]  # [] = removed (copy)
    assert data["covered"] == sum(rows[op]["covered"] for op in ops)
    assert {op for op in ops if rows[op]["covered"]} <= set(by_rules)
    assert data["covered"] >= 153  # 2026-12-02 (the masks, gather and misc25 merges); it rises as ops land
    assert all(rows[op]["reason"] for op in ops if not rows[op]["covered"])
    # known rows: decomposition made visible, refusals with tabula's own line and the stated category
    assert rows["aten.abs.default"]["covered"] and rows["aten.abs.default"]["class"] == "table"
    assert rows["aten.convolution.default"]["graph"] == ["aten.conv2d"]
    assert rows["aten.split_copy.Tensor"]["graph"] == ["aten.slice"]  # split: one slice per piece
    assert rows["aten.arange.start_step"]["graph"] == ["aten.add"]  # the arange folded into a constant
    bit_and = rows["aten.bitwise_and.Tensor"]  # `&` of two masks exports as aten.__and__
    assert bit_and["covered"] and bit_and["graph"] == ["aten.gt", "aten.lt", "aten.__and__"]
    assert bit_and["class"] == "mask"
    assert rows["aten.__lshift__.Scalar"]["category"] == op_coverage.INTEGER


@pytest.mark.host
def test_abs_is_bit_exact_on_the_host_firmware_in_both_schemes(tmp_path):
    out = tmp_path / "abs.json"
    assert op_coverage.main(["--ops", "aten.abs.default", "--out", str(tmp_path / "b"), "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    for scheme in op_coverage.SCHEMES:
        r = row[scheme]
        assert r["exact"] is True and r["differ"] is None, (scheme, r)
        assert r["lsb_fdq"] <= 1 and r["sqnr_db"] > 40, (scheme, r)
    assert row["int8"]["lsb_fdq"] == 0  # an int8 TABLE holds q(f(dq(x))) for every input code
