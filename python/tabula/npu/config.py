"""A board's NPU settings (``board.toml [npu]``) joined with Vela's ``vela.ini``: which system configuration
and memory mode to compile for, the accelerator clock, and which board region holds what the NPU reads
and writes.

``board.toml``::

    [npu]
    base = 0x48102000           # the Ethos-U's registers (ethosu_init); IRQ line of its interrupt
    irq = 56
    secure = 1                  # ethosu_init's secure_enable and privilege_enable
    privileged = 1
    axi0 = "sram"               # the [memory] regions behind Vela's AXI ports (the NPU cannot reach the TCMs)
    axi1 = "ddr"
    [npu.ethos-u55]             # per family: Vela's --system-config and --memory-mode (vela.ini's names)
    system_config = "Ethos_U55_High_End_Embedded"
    memory_mode = "Shared_Sram"

A family without its table takes Vela's defaults (:data:`VELA_DEFAULTS`).  The memory mode says on which
AXI port Vela keeps the constants (the encoded weights: base pointer 0), the arena (the scratch: base
pointer 1) and the cache (the fast scratch: base pointer 2); ``axi0`` / ``axi1`` name the board region
behind each port, so the weights of ``Shared_Sram`` go to ``axi1`` (flash, DDR) and the scratch to ``axi0``
(SRAM).
"""
from __future__ import annotations

import configparser
from dataclasses import dataclass

from ..errors import BoardError
from .targets import NpuTarget, get_target
from .vela import config_file

__all__ = ["NpuConfig", "npu_config", "npu_boards", "VELA_DEFAULTS", "read_vela_ini"]

#: Per family, the system configuration and memory mode Vela itself falls back to (its warnings name them).
VELA_DEFAULTS = {"ethos-u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
                 "ethos-u65": ("Ethos_U65_High_End", "Dedicated_Sram"),
                 "ethos-u85": ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB")}


@dataclass(frozen=True)
class NpuConfig:
    """What one NPU build is compiled and placed for.  ``regions``: board region of the ``weights``,
    ``scratch`` and ``fast_scratch``; ``clock_hz``: the system configuration's ``core_clock``."""

    target: NpuTarget
    board: str
    system_config: str
    memory_mode: str
    clock_hz: float
    base: int
    irq: int
    secure: int
    privileged: int
    regions: dict

    def to_json(self) -> dict:
        return {"target": self.target.name, "family": self.target.family, "macs": self.target.macs,
                "board": self.board, "system_config": self.system_config, "memory_mode": self.memory_mode,
                "clock_hz": self.clock_hz, "base": self.base, "irq": self.irq, "secure": self.secure,
                "privileged": self.privileged, "regions": dict(self.regions)}


def npu_boards() -> list[str]:
    """The boards whose ``board.toml`` has an ``[npu]`` table (an Ethos-U beside the CPU)."""
    from ..boards import list_boards, load_board

    out = []
    for name in list_boards():
        try:
            if isinstance(load_board(name).raw.get("npu"), dict):
                out.append(name)
        except Exception:  # noqa: BLE001 - a broken board.toml is reported by tabula boards, not here
            continue
    return out


def read_vela_ini() -> configparser.ConfigParser:
    """Vela's own ``vela.ini`` (the one beside the installed ``ethos-u-vela``)."""
    cp = configparser.ConfigParser()
    cp.read(config_file())
    return cp


def _section(cp, kind: str, name: str) -> dict:
    key = f"{kind}.{name}"
    if not cp.has_section(key):
        known = sorted(s.split(".", 1)[1] for s in cp.sections() if s.startswith(kind + "."))
        raise BoardError(f"Vela's vela.ini has no {kind} {name!r}; it has {', '.join(known)}")
    out = dict(cp[key])
    parent = out.pop("inherit", None)
    if parent:
        out = {**_section(cp, *parent.split(".", 1)), **out}
    return out


def npu_config(board, target_name: str) -> NpuConfig:
    """The NPU settings of ``board`` (a :class:`tabula.boards.Board`) for ``target_name``.

    Raises:
        StageError: an unknown target.
        BoardError: the board has no ``[npu]`` table (it has no Ethos-U), lacks ``base`` / ``irq`` / an
            ``axi`` region the memory mode uses, names a region its ``[memory]`` does not have, or a
            system configuration / memory mode vela.ini does not have (the message lists them).
    """
    target = get_target(target_name)
    where = f"boards/{board.name}/board.toml"
    npu = board.raw.get("npu")
    if not isinstance(npu, dict):
        raise BoardError(f"board {board.name} has no Ethos-U ({where} has no [npu] table); the NPU boards: "
                         f"{', '.join(npu_boards()) or 'none'}")
    for k in ("base", "irq"):
        if not isinstance(npu.get(k), int):
            raise BoardError(f"{where} [npu] needs {k} (an integer: the Ethos-U's register base and IRQ line)")
    fam = npu.get(target.family, {})
    if not isinstance(fam, dict):
        raise BoardError(f"{where} [npu.{target.family}] must be a table (system_config, memory_mode)")
    if target.family not in npu and any(isinstance(v, dict) for v in npu.values()):
        fams = sorted(k for k, v in npu.items() if isinstance(v, dict))
        raise BoardError(f"board {board.name} has no {target.family} ({where} [npu] lists {', '.join(fams)}); "
                         f"pick an npu= of those families")
    sys_default, mode_default = VELA_DEFAULTS[target.family]
    system_config = str(fam.get("system_config", sys_default))
    memory_mode = str(fam.get("memory_mode", mode_default))
    cp = read_vela_ini()
    sysc = _section(cp, "System_Config", system_config)
    mode = _section(cp, "Memory_Mode", memory_mode)
    names = {r.name for r in board.memory.regions} if board.memory else set()
    regions = {}
    for what, key in (("weights", "const_mem_area"), ("scratch", "arena_mem_area"), ("fast_scratch", "cache_mem_area")):
        axi = mode.get(key, "Axi0").strip().lower()  # "Axi0" / "Axi1"
        region = npu.get(axi)
        if not isinstance(region, str):
            raise BoardError(f"{where} [npu] needs {axi} (the [memory] region behind Vela's {axi.upper()} port: memory "
                             f"mode {memory_mode} keeps the {what.replace('_', ' ')} there)")
        if region not in names:
            raise BoardError(f"{where} [npu] {axi} = {region!r} is not a [memory] region ({', '.join(sorted(names))})")
        regions[what] = region
    return NpuConfig(target=target, board=board.name, system_config=system_config, memory_mode=memory_mode,
                     clock_hz=float(sysc.get("core_clock", "0")), base=int(npu["base"]), irq=int(npu["irq"]),
                     secure=int(npu.get("secure", 1)), privileged=int(npu.get("privileged", 1)), regions=regions)
