"""``profile=1``: the firmware times every op of ``tabula_model_run`` and the host reports them.

The protocol part (HELLO flags bit 0, per-op ticks at the end of OUTPUT: docs/protocol.md) round-trips
and refuses a wrong size; codegen without ``profile`` renders what it rendered before (no tick reads,
no ``TABULA_MODEL_N_PROFILED_OPS``) and with it one pair of tick reads per op; and the digits example,
built with ``profile=1`` and run on the host and on QEMU's Cortex-M55, gives ``results.json``
``profile`` entries that name each op's kernel, shape and MACs, whose counts add up to no more than
the inference's."""
from __future__ import annotations

import json
import re

import pytest

from helpers import scons
from tabula.stages import generate_sources
from tabula.deploy.protocol import ProtocolError, encode_hello, encode_output, parse_hello, parse_output


def test_profiled_output_round_trips_and_is_size_checked():
    h = parse_hello(encode_hello([4], [3, 2], 1000, "b", flags=1))
    assert h.profile and h.flags == 1
    assert not parse_hello(encode_hello([4], [3, 2], 1000, "b")).profile
    payload = encode_output(77, 0, [b"abc", b"de"], op_ticks=[5, 0, 2**32 - 1])
    out = parse_output(payload, [3, 2], profile=True)
    assert (out.ticks, out.status, out.outputs, out.op_ticks) == (77, 0, [b"abc", b"de"], (5, 0, 2**32 - 1))
    assert parse_output(encode_output(77, 0, [b"abc", b"de"]), [3, 2]).op_ticks is None
    with pytest.raises(ProtocolError, match="3 ops"):
        parse_output(payload[:-1], [3, 2], profile=True)
    with pytest.raises(ProtocolError):
        parse_output(payload, [3, 2])          # a profiled frame where none is expected


def _build(board: str, digits_dir, tmp_path, *extra):
    scons(f"board={board}", f"build_dir={tmp_path}", f"model={digits_dir / 'model.pt2'}",
          f"calib={digits_dir / 'calib.npz'}", f"data={digits_dir / 'test.npz'}", "name=digits", "limit=3", *extra)
    return tmp_path / board


def _check_profile(res: dict, src) -> list[dict]:
    ops = json.loads((src / "profile.json").read_text())["ops"]
    prof = res["profile"]
    assert [p["op"] for p in prof] == [o["op"] for o in ops] and len(prof) >= 5
    code = (src / "model.c").read_text()
    assert code.count("tabula_board_ticks()") == 2 * len(prof)
    assert re.search(r"#define TABULA_MODEL_N_PROFILED_OPS %du" % len(prof), (src / "model.h").read_text())
    convs = [p for p in prof if p["op"] == "CONV2D"]
    assert convs and all(p["kernel"] == "tabula_conv2d_s8_folded" for p in convs)  # codegen fold_input_zp
    first = convs[0]   # digits: conv 1 -> 8 channels, 3x3, on 8x8 (padding 1)
    assert first["macs"] == 8 * 8 * 8 * 9 * 1 and first["shape"] == [1, 8, 8, 8]
    assert all(p["ticks"] >= 0 for p in prof)
    assert sum(p["ticks"] for p in prof) <= res["ticks_per_inference"]
    assert sum(p["ticks"] for p in prof) > 0.5 * res["ticks_per_inference"]
    return prof


@pytest.mark.host
def test_profile_on_host(digits_dir, tmp_path):
    """board=host: ticks are ns (no instruction counts); the unprofiled build has no tick reads per op."""
    root = _build("host", digits_dir, tmp_path, "profile=1")
    res = json.loads((root / "digits-profile" / "results.json").read_text())
    assert res["bit_exact_mismatches"] == 0
    prof = _check_profile(res, root / "digits-profile" / "src")
    assert all(p["instructions"] is None and p["instr_per_mac"] is None for p in prof)
    # the run stage again, from the float outputs SCons computed once: no torch in that process
    from helpers import torch_modules

    d = root / "digits-profile"
    assert torch_modules("run", "--board", "host", "--elf", str(d / "firmware"), "--ir", str(d), "--data",
                         str(digits_dir / "test.npz"), "--float", str(d / "float_outputs.npz"), "--limit", "3",
                         "--out", str(tmp_path / "again"), "--quiet") == 0
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["sqnr_db_vs_float"] == res["sqnr_db_vs_float"] and again["profile"][0]["op"] == "CONV2D"
    # the same IR without profile: no tick reads in model.c, no profile.json (an old one is removed)
    src = tmp_path / "src"
    src.mkdir()
    (src / "profile.json").write_text("{}")
    generate_sources(root / "digits-profile", src, "digits", "host")
    assert "tabula_board_ticks" not in (src / "model.c").read_text() and not (src / "profile.json").exists()
    assert "PROFILED" not in (src / "model.h").read_text()


@pytest.mark.qemu
def test_profile_on_qemu(digits_dir, tmp_path):
    """corstone300 on QEMU (-icount shift=0): per-op instructions and instructions per MAC."""
    root = _build("corstone300", digits_dir, tmp_path, "profile=1")
    res = json.loads((root / "digits-profile" / "results.json").read_text())
    assert res["bit_exact_mismatches"] == 0
    prof = _check_profile(res, root / "digits-profile" / "src")
    assert sum(p["instructions"] for p in prof) <= res["instructions_per_inference"]
    for p in prof:
        assert p["instructions"] is not None
        if p["macs"]:
            assert p["instr_per_mac"] == pytest.approx(p["instructions"] / p["macs"], abs=1e-3)
            assert 0.05 < p["instr_per_mac"] < 100
        else:
            assert p["instr_per_mac"] is None
