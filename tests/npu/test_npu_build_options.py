"""What an NPU build asks of its user, in one line each: a target the board has, Vela installed, Arm's
driver (or the test-only stand-in) -- and where the driver's sources and defines come from."""
from __future__ import annotations

from pathlib import Path

import pytest

import sys

from helpers import ROOT, scons
from tabula.boards import load_board
from tabula.npu import npu_config

sys.path.insert(0, str(ROOT / "toolchain"))
from firmware import DRIVER_MISSING, STANDIN, npu_sources  # noqa: E402


@pytest.mark.parametrize("args,line", [
    (["npu=ethos-u99"], "scons: npu=ethos-u99: unknown NPU target 'ethos-u99'; choose one of ethos-u55-32"),
    (["board=mps2_an386", "npu=ethos-u55-128"], "board mps2_an386 has no Ethos-U (boards/mps2_an386/board.toml has no "
                                                "[npu] table); the NPU boards: corstone300"),
    (["npu=ethos-u85-256"], "board corstone300 has no ethos-u85 (boards/corstone300/board.toml [npu] lists ethos-u55, "
                            "ethos-u65)"),
    (["npu_driver=standin"], "npu_driver= and ethosu_driver= are for an NPU build"),
    (["npu=ethos-u55-128", "ethosu_driver=/nonexistent", "runner=qemu"], "QEMU has no Ethos-U"),
])
def test_bad_npu_options_stop_scons_with_one_line(tmp_path, args, line):
    p = scons("board=corstone300", *args, f"build_dir={tmp_path}", check=False, timeout=120)
    assert p.returncode == 2 and line in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_npu_sources_name_the_driver_the_standin_and_the_board_defines(tmp_path):
    cfg = npu_config(load_board("corstone300"), "ethos-u55-128")
    extra, path, defines = npu_sources(cfg, "standin")
    assert extra["standin"] == [STANDIN / "ethosu_standin.c"] and extra["npu"][0].name == "tabula_npu.c"
    assert ("TABULA_NPU_BASE", "0x48102000u") in defines and ("TABULA_NPU_IRQ", "56u") in defines
    with pytest.raises(ValueError) as e:
        npu_sources(cfg, "ethosu", "")
    assert str(e.value) == DRIVER_MISSING and "github.com/ARM-software/ethos-u-core-driver" in DRIVER_MISSING
    with pytest.raises(ValueError, match="is not the Ethos-U core driver"):
        npu_sources(cfg, "ethosu", str(tmp_path))
    drv = tmp_path / "drv"
    (drv / "include").mkdir(parents=True)
    (drv / "src").mkdir()
    (drv / "include" / "ethosu_driver.h").write_text("/* a fake */\n")
    (drv / "src" / "ethosu_driver.c").write_text('#include "ethosu_driver.h"\n')
    (drv / "src" / "ethosu_device_u55_u65.c").write_text("int x;\n")
    extra, path, defines = npu_sources(cfg, "ethosu", str(drv))
    assert [Path(p).name for p in extra["ethosu_driver"]] == ["ethosu_driver.c", "ethosu_device_u55_u65.c"]
    assert str(drv / "include") in path and "ETHOSU55" in defines
    (drv / "src" / "ethosu_driver.c").write_text('#include <cmsis_compiler.h>\n')
    with pytest.raises(ValueError, match="cmsis=<that folder>"):
        npu_sources(cfg, "ethosu", str(drv))
    cm = tmp_path / "cmsis" / "CMSIS" / "Core" / "Include"
    cm.mkdir(parents=True)
    (cm / "cmsis_compiler.h").write_text("\n")
    assert str(cm) in npu_sources(cfg, "ethosu", str(drv), str(tmp_path / "cmsis"))[1]
    u65 = npu_sources(npu_config(load_board("corstone300"), "ethos-u65-256"), "ethosu", str(drv), str(tmp_path / "cmsis"))
    assert "ETHOSU65" in u65[2]


def test_the_fvp_gets_the_targets_macs_and_the_u65_model(tmp_path):
    from tabula.deploy.runners.fvp import fvp_command

    elf = tmp_path / "firmware.elf"
    elf.write_bytes(b"")
    assert not any("ethosu" in a for a in fvp_command(elf, {}))  # a CPU-only build: no NPU flag
    (tmp_path / "npu").mkdir()
    (tmp_path / "npu" / "plan.json").write_text('{"macs": 128, "family": "ethos-u55"}')
    cmd = fvp_command(elf, {})
    assert cmd[0] == "FVP_Corstone_SSE-300_Ethos-U55" and cmd[cmd.index("ethosu.num_macs=128") - 1] == "-C"
    (tmp_path / "npu" / "plan.json").write_text('{"macs": 256, "family": "ethos-u65"}')
    cmd = fvp_command(elf, {})
    assert cmd[0] == "FVP_Corstone_SSE-300_Ethos-U65" and "ethosu.num_macs=256" in cmd
