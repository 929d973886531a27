"""Every op class lowers and runs bit-exact in both schemes: a model using all of them, through
SCons, on the host build (C == Python reference) and on the emulated Corstone-300."""
from __future__ import annotations

import json
import pytest

from fixtures.zoo_model import export_zoo
from helpers import scons


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    d = tmp_path_factory.mktemp("zoo")
    export_zoo(d)
    return d


def _run(zoo, build, board, scheme):
    scons(f"board={board}", f"scheme={scheme}", f"build_dir={build}", f"model={zoo / 'zoo.pt2'}",
          f"calib={zoo / 'calib.npz'}", f"data={zoo / 'test.npz'}")
    name = "zoo" if scheme == "int8" else f"zoo-{scheme}"
    return json.loads((build / board / name / "results.json").read_text()), build / board / name


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_every_op_class_bit_exact_on_host(zoo, tmp_path, scheme):
    r, out = _run(zoo, tmp_path, "host", scheme)
    assert r["n_outputs_received"] == 16 and r["bit_exact_mismatches"] == 0
    assert r["sqnr_db_vs_float"] > (30 if scheme == "int8" else 45)
    ops = {o["op"] for o in json.loads((out / "ir.json").read_text())["ops"]}
    assert {"CONV2D", "FULLY_CONNECTED", "TABLE", "CLAMP", "MAX_POOL2D", "AVG_POOL2D", "TRANSPOSE", "RESHAPE",
            "SLICE", "PAD", "RESIZE", "CONCAT", "ADD", "SUB", "MUL", "RESCALE"} <= ops
    assert {t["function"] for t in r["tables"]} == {"aten.sigmoid", "aten.tanh", "aten.gelu", "aten.silu"}


@pytest.mark.qemu
def test_every_op_class_bit_exact_on_corstone300_a16w8(zoo, tmp_path):
    r, _ = _run(zoo, tmp_path, "corstone300", "a16w8")
    assert r["n_outputs_received"] == 16 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0


@pytest.mark.qemu
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_helium_paths_are_bit_exact_on_corstone300(tmp_path, scheme):
    """conv2d / fully_connected (int8, and int16 x int8 for a16w8) take Helium (MVE) paths on the M55;
    patch lengths 33..456 exercise the tail predication: the build is bit-exact with the Python
    reference.  (The portable path: the host builds and tests/ops/test_device_paths.py on the M55.)"""
    from fixtures.mve_shapes_model import export_mve_shapes

    export_mve_shapes(tmp_path)
    scons("board=corstone300", f"scheme={scheme}", f"build_dir={tmp_path / 'b'}",
          f"model={tmp_path / 'mve.pt2'}", f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}")
    name = "mve" + ("" if scheme == "int8" else f"-{scheme}")
    r = json.loads((tmp_path / "b" / "corstone300" / name / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
