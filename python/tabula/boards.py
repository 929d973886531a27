"""Boards: one folder per board under ``boards/<name>/`` with a declarative ``board.toml``.

``load_board(name)`` reads it into a :class:`Board`; ``list_boards()`` lists the folders. The repo
root is ``python/tabula/../../`` unless the environment variable ``TABULA_ROOT`` says otherwise.

A board.toml says (keys in ``REQUIRED_KEYS`` are required, the rest optional):

- ``name``, ``description``, ``cpu``, ``toolchain`` (an SCons tool in ``toolchain/``), ``cflags``,
  ``ldflags``, ``linker_script``, ``sources`` (C files in the board folder), ``shared`` (C files in
  ``boards/_shared/``: startup, UART driver, tick source, exit), ``n_irqs``, ``tick_hz``;
- ``[uart]``: ``base``, ``clock_hz``, ``baud`` (become ``-DTABULA_UART_BASE=...`` etc.);
- ``[memory]``: the board's regions, the source of truth for the linker script's MEMORY block, the
  stack and heap sizes and codegen's placement of constants and arena (:mod:`tabula.memory`);
- ``[runner]``: ``default``, optional ``prefer`` (runners tried in order, the first whose program
  is installed wins, e.g. ``["fvp", "qemu"]``), then one ``[runner.<name>]`` table per runner;
- ``[serial]`` (real boards): ``baud``, ``usb_ids`` (``"VID:PID"`` or ``"VID"``, hex) to find the
  port, ``boot_s`` (how long the board may take to send HELLO after reset).

Folders whose name starts with ``_`` hold shared parts, not boards.
"""
from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BoardError
from .memory import MemoryMap, parse_memory

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
    "pyocd": "pip install 'tabula[board]'  (or: pip install pyocd)",
    "FVP_Corstone_SSE-300_Ethos-U55": "download the Corstone-300 FVP from developer.arm.com and put "
                                      "its models/Linux64_GCC-9.3 folder on PATH (see README: Arm FVP)",
}


def repo_root() -> Path:
    """The tabula checkout: ``$TABULA_ROOT`` if set, else two levels above this package."""
    env = os.environ.get("TABULA_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parent.parent.parent


def boards_dir() -> Path:
    return repo_root() / "boards"


def shared_dir() -> Path:
    """``boards/_shared``: C and linker parts several boards link (see its tabula_board_parts.h)."""
    return boards_dir() / "_shared"


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
    uart: dict = field(default_factory=dict)     # [uart]: base, clock_hz, baud
    serial: dict = field(default_factory=dict)   # [serial]: baud, usb_ids, boot_s (real boards)
    n_irqs: int | None = None
    memory: MemoryMap | None = None              # [memory]: regions, stack/heap/code room

    @property
    def default_runner(self) -> str:
        return self.runner.get("default", "host")

    def pick_runner(self, requested: str | None = None) -> str:
        """``requested`` if given; else the first of ``[runner] prefer`` whose program (its
        table's ``binary``) is on PATH; else ``default``. E.g. corstone300 prefers the FVP when
        ``FVP_Corstone_SSE-300_Ethos-U55`` is installed and falls back to QEMU."""
        if requested:
            return requested
        for name in self.runner.get("prefer", []):
            binary = self.runner_config(name).get("binary")
            if binary and shutil.which(binary):
                return name
        return self.default_runner

    def defines(self) -> list[tuple[str, str]]:
        """C defines generated from board.toml: the UART (base, clock, baud) and the IRQ count."""
        out = []
        for key, macro in (("base", "TABULA_UART_BASE"), ("clock_hz", "TABULA_UART_CLOCK_HZ"),
                           ("baud", "TABULA_UART_BAUD")):
            if key in self.uart:
                out.append((macro, f"{int(self.uart[key]):#x}u" if key == "base" else f"{int(self.uart[key])}u"))
        if self.n_irqs is not None:
            out.append(("TABULA_N_IRQS", str(int(self.n_irqs))))
        return out

    def runner_config(self, name: str | None = None) -> dict:
        """The ``[runner.<name>]`` table (default runner when ``name`` is None)."""
        return dict(self.runner.get(name or self.default_runner, {}))


def list_boards() -> list[str]:
    """Names of all boards (folders of ``boards/`` holding a board.toml), sorted."""
    d = boards_dir()
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir()
                  if not p.name.startswith("_") and (p / "board.toml").is_file())


def load_board(name: str) -> Board:
    """Read ``boards/<name>/board.toml``.

    Raises:
        BoardError (a ValueError): an unknown name (listing the known ones), or a board.toml that is
            not valid TOML, lacks a required key or has a value of the wrong type (naming the file).
    """
    bdir = boards_dir() / name
    toml_path = bdir / "board.toml"
    if not toml_path.is_file():
        known = ", ".join(list_boards()) or "none"
        raise BoardError(f"unknown board {name!r}: available boards are {known} (in {boards_dir()})")
    try:
        with toml_path.open("rb") as f:
            raw = tomllib.load(f)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise BoardError(f"{toml_path} is not readable TOML ({e}); fix it (copy the closest board's "
                         "board.toml, README: Adding a board) or remove the folder") from None
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise BoardError(f"{toml_path}: missing keys {', '.join(missing)}; add them (README: Adding a board)")
    if raw["name"] != name:
        raise BoardError(f"{toml_path}: name = {raw['name']!r} but the folder is {name!r}; make them the same")
    try:
        return _board(name, bdir, raw)
    except BoardError:
        raise
    except ValueError as e:
        if "board.toml" in str(e):  # parse_memory's own line names the file and the rule
            raise BoardError(str(e)) from None
        raise BoardError(f"{toml_path}: {e}; compare with a working board's board.toml (README: Adding a board)") from None
    except (TypeError, KeyError, AttributeError) as e:
        raise BoardError(f"{toml_path}: a value has the wrong type or form ({type(e).__name__}: {e}); "
                         "compare with a working board's board.toml (README: Adding a board)") from None


def _board(name: str, bdir: Path, raw: dict) -> Board:
    script = raw.get("linker_script")
    return Board(
        name=name,
        dir=bdir,
        description=str(raw["description"]),
        cpu=str(raw["cpu"]),
        toolchain=raw["toolchain"],
        cflags=list(raw.get("cflags", [])),
        ldflags=list(raw.get("ldflags", [])),
        linker_script=bdir / script if script else None,
        sources=[bdir / s for s in raw["sources"]] + [shared_dir() / s for s in raw.get("shared", [])],
        tick_hz=int(raw["tick_hz"]),
        runner=dict(raw["runner"]),
        raw=raw,
        uart=dict(raw.get("uart", {})),
        serial=dict(raw.get("serial", {})),
        n_irqs=raw.get("n_irqs"),
        memory=parse_memory(raw.get("memory"), name, f"boards/{name}/board.toml"),
    )


def missing_tools(board: Board, run: bool = True, runner: str | None = None) -> list[str]:
    """One line per external program the board needs (to build, and to run with ``runner`` — by
    default the one :meth:`Board.pick_runner` picks — when ``run``) that is not on PATH, each
    with the command that installs it. Empty when all are present."""
    need = {"arm_gnu": ["arm-none-eabi-gcc"], "host_gcc": ["gcc"]}.get(board.toolchain, [])
    if run:
        name = board.pick_runner(runner)
        need = need + {"qemu": ["qemu-system-arm"], "board": ["pyocd"],
                       "fvp": [board.runner_config("fvp").get("binary", "FVP_Corstone_SSE-300_Ethos-U55")]
                       }.get(name, [])
    return [f"{tool} not found; install it with: {INSTALL_HINTS.get(tool, tool)}"
            for tool in need if shutil.which(tool) is None]
