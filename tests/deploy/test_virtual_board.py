"""A virtual dev board: the digits firmware on QEMU with its UART on a pseudo-terminal, driven through
the real ``board`` runner and pyserial -- probe check, target check, "flash", serial port, reset,
session -- with only pyocd replaced (tests/fixtures/virtual_board/pyocd starts QEMU paused on "load"
and lets it run on "reset").  So the path a flashed board takes is tested end to end on every change,
bit-exact against the integer reference, on a clean link and at 1 % byte faults."""
from __future__ import annotations

import os
import signal
import tomllib
from pathlib import Path

import pytest

import tabula.boards as boards
from tabula.stages import run_and_report

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "virtual_board"


@pytest.fixture
def virtual_board(tmp_path, monkeypatch):
    """The board ``virtual_m55`` (fixtures/virtual_board/board.toml), its pyocd first on PATH; yields
    the serial port (a symlink the fake points at QEMU's pty). QEMU is killed if it is still there."""
    base = real_board = boards.load_board("corstone300")
    raw = {**real_board.raw, **tomllib.loads((FIXTURE / "board.toml").read_text())}
    board = boards._board("virtual_m55", base.dir, raw)
    real = boards.load_board
    monkeypatch.setattr(boards, "load_board", lambda name: board if name == "virtual_m55" else real(name))
    state = tmp_path / "vboard"
    state.mkdir()
    monkeypatch.setenv("PATH", f"{FIXTURE}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("VBOARD_DIR", str(state))
    monkeypatch.setenv("VBOARD_PORT", str(state / "ttyVB0"))
    yield str(state / "ttyVB0")
    pid = state / "qemu.pid"
    if pid.is_file():
        try:
            os.killpg(int(pid.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _validate(build, port, out: Path, limit: int) -> dict:
    return run_and_report(build.elf, "virtual_m55", build.out, build.data, build.model, out, port=port,
                          limit=limit, timeout_s=30)


@pytest.mark.qemu
def test_digits_bit_exact_on_the_virtual_dev_board(digits_m55_build, virtual_board, tmp_path):
    r = _validate(digits_m55_build, virtual_board, tmp_path / "clean", limit=120)
    assert r["runner"] == "board" and r["n_samples"] == r["n_outputs_received"] == 120
    assert r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert r["device_accuracy"] == r["reference_accuracy"] > 0.9
    assert r["ticks_per_inference"] > 0 and r["instructions_per_inference"] is None   # a board: ticks, no icount
    assert r["link"]["retries"] == 0 and r["link"]["frames_received"] == 122          # HELLO, 120 OUTPUT, STATUS
    calls = (Path(os.environ["VBOARD_DIR"]) / "calls.log").read_text().splitlines()
    assert [c.split()[0] + " " + c.split()[1] for c in calls] == [
        "json --probes", "json --targets", "load --target", "reset --target"]
    assert "--uid VIRTUAL0001" in calls[2] and calls[2].endswith(str(digits_m55_build.elf))
    print(f"virtual board, clean: 120 samples in {r['wall_seconds']} s, {r['link']}")


@pytest.mark.qemu
def test_digits_bit_exact_on_the_virtual_dev_board_through_a_noisy_link(digits_m55_build, virtual_board, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("TABULA_LINK_FAULTS", "1e-2:1")
    r = _validate(digits_m55_build, virtual_board, tmp_path / "faults", limit=30)
    assert r["n_samples"] == r["n_outputs_received"] == 30
    assert r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    injected = r["link"]["injected"]
    assert injected["spec"] == "0.01:1" and injected["frames_damaged"] >= 5     # the link really was bad
    assert r["link"]["retries"] >= injected["frames_damaged"] // 2
    calls = (Path(os.environ["VBOARD_DIR"]) / "calls.log").read_text().splitlines()
    assert calls[0] == "json --probes" and calls[-1].startswith("reset --target virtual_m55 --uid VIRTUAL0001")
    print(f"virtual board, 1e-2: 30 samples in {r['wall_seconds']} s, {r['link']}")
