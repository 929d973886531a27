"""Boards as data: every boards/<name>/board.toml loads and is consistent; `scons board=list` and
`tabula boards` list them; the real dev boards (not runnable here) build, with the vector table
at their flash origin and .data loaded from flash; the digits example runs bit-exact on the
three extra QEMU boards through `tabula validate`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tabula.boards import boards_dir, list_boards, load_board, missing_tools, repo_root

ROOT = repo_root()
ECHO = ROOT / "tests" / "fixtures" / "echo_model" / "SConstruct"
QEMU_BOARDS = ["corstone300", "mps2_an386", "mps2_an500", "mps2_an505"]
REAL_BOARDS = ["nucleo_h743zi", "numaker_m55m1"]


def test_every_board_folder_is_listed_and_loads():
    names = list_boards()
    assert set(QEMU_BOARDS + REAL_BOARDS + ["host"]) <= set(names)
    assert "_shared" not in names
    for name in names:
        b = load_board(name)
        assert b.dir == boards_dir() / name
        assert all(s.is_file() for s in b.sources), name
        if b.toolchain == "arm_gnu":
            assert b.linker_script.is_file() and b.tick_hz > 0
            assert {"base", "clock_hz", "baud"} <= set(b.uart), name
            assert f"-mcpu={b.cpu}" in b.cflags, name
            assert not any("mve" in f for f in b.cflags)
        assert b.default_runner in b.runner, name


def test_uart_bases_and_runners_follow_the_hardware():
    assert load_board("mps2_an386").uart["base"] == 0x40004000
    assert load_board("mps2_an500").uart["base"] == 0x40004000
    assert load_board("mps2_an505").uart["base"] == 0x40200000
    assert load_board("corstone300").uart["base"] == 0x49303000
    for name in QEMU_BOARDS:
        assert load_board(name).default_runner == "qemu"
    assert load_board("corstone300").runner["prefer"] == ["fvp", "qemu"]
    h7 = load_board("nucleo_h743zi")
    assert (h7.default_runner, h7.runner_config("board")["target"]) == ("board", "stm32h743xx")
    assert "0483:374b" in h7.serial["usb_ids"]
    assert load_board("numaker_m55m1").runner_config("board")["target"] == "m55m1h2ljae"


def test_board_list_commands():
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=list"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == list_boards()
    assert any(ln.split()[:3] == ["nucleo_h743zi", "cortex-m7", "board"] for ln in lines)
    assert any(ln.split()[:3] == ["corstone300", "cortex-m55", "qemu/fvp"] for ln in lines)
    c = subprocess.run([sys.executable, "-m", "tabula.cli", "boards"], capture_output=True,
                       text=True, timeout=120)
    assert c.returncode == 0 and c.stdout == r.stdout


def test_missing_pyocd_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    lines = missing_tools(load_board("nucleo_h743zi"))
    assert lines[-1] == "pyocd not found; install it with: pip install 'tabula[board]'  (or: pip install pyocd)"


def _elf_layout(elf: Path) -> dict:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        e = ELFFile(f)
        secs = {s.name: (s["sh_addr"], s["sh_size"]) for s in e.iter_sections()}
        data_lma = next((seg["p_paddr"] for seg in e.iter_segments()
                         if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] == secs[".data"][0]), None)
        return {"sections": secs, "data_lma": data_lma, "entry": e["e_entry"]}


@pytest.mark.arm
@pytest.mark.parametrize("name,flash,ram", [("nucleo_h743zi", 0x08000000, 0x20000000),
                                            ("numaker_m55m1", 0x00100000, 0x20000000)])
def test_real_boards_build(tmp_path, name, flash, ram):
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-f", str(ECHO), f"board={name}",
                        f"build_dir={tmp_path}"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lay = _elf_layout(tmp_path / "firmware.elf")
    secs = lay["sections"]
    assert secs[".vectors"][0] == flash                   # boot reads SP and PC here
    assert flash <= lay["entry"] < flash + 0x200000
    assert ram <= secs[".data"][0] < ram + 0x20000 and ram <= secs[".bss"][0] < ram + 0x20000
    assert flash < lay["data_lma"] < flash + 0x200000      # .data is copied from flash at reset
    assert secs[".stack"][0] + secs[".stack"][1] == ram + 0x20000   # stack at the top of DTCM
    nm = subprocess.run(["arm-none-eabi-nm", str(tmp_path / "firmware.elf")], capture_output=True,
                        text=True).stdout
    assert " T tabula_board_putc" in nm and " T tabula_board_ticks" in nm
    assert "semihost" not in nm                             # real boards park, never BKPT


def _validate(board: str, build_dir: Path) -> tuple[subprocess.CompletedProcess, dict | None]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "validate", "--board", board,
                        "--limit", "40", "--build-dir", str(build_dir)], capture_output=True,
                       text=True, env=env, timeout=600)
    res = build_dir / board / "digits" / "results.json"
    return p, (json.loads(res.read_text()) if res.is_file() else None)


@pytest.mark.qemu
def test_digits_bit_exact_on_the_extra_qemu_boards(tmp_path):
    """`tabula validate` (build + run + check) for M4, M7 and M33; the full 360 samples run on
    corstone300 in test_end_to_end.py. One after the other: concurrent SCons runs in the repo
    root would share its .sconsign database. The first trains the example, the others reuse it."""
    boards = ["mps2_an386", "mps2_an500", "mps2_an505"]
    runs = {b: _validate(b, tmp_path) for b in boards}
    for board, (p, r) in runs.items():
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        assert "bit_exact_mismatches        0" in p.stdout
        assert r["board"] == board and r["runner"] == "qemu"
        assert r["n_samples"] == r["n_outputs_received"] == 40
        assert r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
        assert r["device_accuracy"] == r["reference_accuracy"] >= 0.9
        assert 50_000 < r["instructions_per_inference"] < 5_000_000  # digits: ~96 K on the M4 (DSP) since its SSAT epilogue
        assert 2_000 < r["flash_bytes"] < 64 * 1024 and r["arena_bytes"] < r["ram_bytes"]
        print(f"{board}: {r['instructions_per_inference']} instructions/inference, "
              f"flash {r['flash_bytes']} B, RAM {r['ram_bytes']} B")
    # the same integer program everywhere: identical generated C
    srcs = {(tmp_path / b / "digits" / "src" / "model.c").read_bytes() for b in boards}
    assert len(srcs) == 1
