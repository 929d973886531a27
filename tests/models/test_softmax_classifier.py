"""A tiny classifier ending in softmax (linear -> relu -> linear -> softmax over 10 classes) through
SCons on the host build, int8 and a16w8: every output bit-exact with the Python integer reference, the
generated C calls the fused softmax kernel once (no int32 intermediate in the arena), and the
probabilities stay close to float."""
from __future__ import annotations

import json

import pytest

from fixtures.softmax_classifier import export_softmax_classifier
from helpers import scons


@pytest.fixture(scope="module")
def clf(tmp_path_factory):
    d = tmp_path_factory.mktemp("clf")
    export_softmax_classifier(d)
    return d


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_classifier_bit_exact_on_host(clf, tmp_path, scheme):
    scons("board=host", f"scheme={scheme}", f"build_dir={tmp_path}", f"model={clf / 'clf.pt2'}",
          f"calib={clf / 'calib.npz'}", f"data={clf / 'test.npz'}")
    out = tmp_path / "host" / ("clf" if scheme == "int8" else f"clf-{scheme}")
    r = json.loads((out / "results.json").read_text())
    assert r["n_outputs_received"] == 16 and r["bit_exact_mismatches"] == 0
    assert r["device_accuracy"] == r["reference_accuracy"] >= 0.9
    assert r["sqnr_db_vs_float"] > (25 if scheme == "int8" else 40)
    ops = [o["op"] for o in json.loads((out / "ir.json").read_text())["ops"]]
    assert {"REDUCE_MAX", "REDUCE_SUM", "TILE", "INTDIV", "TABLE", "MUL"} <= set(ops)  # the IR keeps the TOSA ops
    c = (out / "src" / "model.c").read_text()
    kernel = "tabula_softmax_s8(" if scheme == "int8" else "tabula_softmax_s16("
    assert c.count(kernel) == 1 and "tabula_intdiv_s32(" not in c and "tabula_reduce_sum_s32(" not in c
