"""Boards: one folder per board under ``boards/<name>/`` with a declarative ``board.toml``.

``load_board(name)`` reads it into a :class:`Board`; ``list_boards()`` lists the folders. The repo
root is ``python/tabula/../../`` unless the environment variable ``TABULA_ROOT`` says otherwise.
"""
from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REQUIRED_KEYS = ("name", "description", "cpu", "toolchain", "sources", "tick_hz", "runner")

# Flags every board's C gets; board.toml adds the CPU-specific ones (toolchain/<tool>.py applies).
COMMON_CFLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-ffunction-sections", "-fdata-sections"]
C_STD = "-std=c99"
COMMON_LINKFLAGS = ["-Wl,--gc-sections"]

# What each external tool is for, and the one command that installs it (Debian/Ubuntu).
INSTALL_HINTS = {
    "arm-none-eabi-gcc": "apt-get install --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "qemu-system-arm": "apt-get install --no-install-recommends qemu-system-arm",
    "gcc": "apt-get install --no-install-recommends gcc libc6-dev",
}


def repo_root() -> Path:
    """The tabula checkout: ``$TABULA_ROOT`` if set, else two levels above this package."""
    env = os.environ.get("TABULA_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parent.parent.parent


def boards_dir() -> Path:
    return repo_root() / "boards"


@dataclass(frozen=True)
class Board:
    name: str
    dir: Path
    description: str
    cpu: str
    toolchain: str                 # SCons tool in toolchain/: "arm_gnu" or "host_gcc"
    cflags: list[str]
    ldflags: list[str]
    linker_script: Path | None
    sources: list[Path]
    tick_hz: int                   # ticks per second of tabula_board_ticks(); 0 = unknown
    runner: dict                   # [runner] table: "default" plus one sub-table per runner
    raw: dict = field(repr=False)  # the whole board.toml

    @property
    def default_runner(self) -> str:
        return self.runner.get("default", "host")

    def runner_config(self, name: str | None = None) -> dict:
        """The ``[runner.<name>]`` table (default runner when ``name`` is None)."""
        return dict(self.runner.get(name or self.default_runner, {}))


def list_boards() -> list[str]:
    """Names of all boards (folders of ``boards/`` holding a board.toml), sorted."""
    d = boards_dir()
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if (p / "board.toml").is_file())


def load_board(name: str) -> Board:
    """Read ``boards/<name>/board.toml``. Unknown names raise ValueError listing the known ones."""
    bdir = boards_dir() / name
    toml_path = bdir / "board.toml"
    if not toml_path.is_file():
        known = ", ".join(list_boards()) or "none"
        raise ValueError(f"unknown board {name!r}: available boards are {known} (in {boards_dir()})")
    with toml_path.open("rb") as f:
        raw = tomllib.load(f)
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise ValueError(f"{toml_path}: missing keys {', '.join(missing)}")
    if raw["name"] != name:
        raise ValueError(f"{toml_path}: name = {raw['name']!r} but the folder is {name!r}")
    script = raw.get("linker_script")
    return Board(
        name=name,
        dir=bdir,
        description=raw["description"],
        cpu=raw["cpu"],
        toolchain=raw["toolchain"],
        cflags=list(raw.get("cflags", [])),
        ldflags=list(raw.get("ldflags", [])),
        linker_script=bdir / script if script else None,
        sources=[bdir / s for s in raw["sources"]],
        tick_hz=int(raw["tick_hz"]),
        runner=dict(raw["runner"]),
        raw=raw,
    )


def missing_tools(board: Board, run: bool = True) -> list[str]:
    """One line per external program the board needs (to build, and to run when ``run``) that is
    not on PATH, each with the command that installs it. Empty when all are present."""
    need = {"arm_gnu": ["arm-none-eabi-gcc"], "host_gcc": ["gcc"]}.get(board.toolchain, [])
    if run and board.default_runner == "qemu":
        need = need + ["qemu-system-arm"]
    return [f"{tool} not found; install it with: {INSTALL_HINTS[tool]}"
            for tool in need if shutil.which(tool) is None]
