"""A board's memory regions, read from its ``board.toml [memory]`` table: the one source of truth.

Everything else follows from it: the linker script's ``MEMORY`` block, the ``CODE``/``RAM`` aliases,
the stack and heap sizes and one output section per region that may hold model constants or
arena (:func:`linker_script`, generated into the build), where codegen places each constant array
and each part of the arena (:mod:`tabula.codegen.placement`), and the one-line error a linker
overflow becomes (:func:`linker_overflow_line`).

``board.toml``::

    [memory]
    stack_bytes = 0x10000   # at the top of the ram region (default 16 KiB)
    heap_bytes = 0x1000     # after .bss (default 1 KiB; malloc is unused)
    code_bytes = 0x10000    # room kept in the code region for vectors, .text, the runtime's .rodata
                            # and .data's load image (codegen's estimate of the code size)
    itcm = { origin = 0x00000000, length = 0x00080000, kind = "code", speed = 0, holds = ["code", "const"] }
    dtcm = { origin = 0x20000000, length = 0x00080000, kind = "ram", speed = 0, holds = ["ram", "arena", "const"] }

Each region: ``origin`` and ``length`` in bytes; ``kind`` -- ``"code"`` (RAM the core executes from,
e.g. an ITCM), ``"ram"``, or ``"rom"`` (flash: written only when the board is programmed);
``speed`` -- a rank, 0 for the fastest (TCM), larger for slower memory (SRAM, DDR, flash);
``holds`` -- what may go there: ``"code"`` (vectors, .text, .rodata, .data's load image: exactly
one region), ``"ram"`` (.data, .bss, heap, stack: exactly one region), ``"const"`` (the model's
constant arrays) and ``"arena"`` (the model's activations).  Regions are tried fastest first
(``speed``, then the order they are declared in).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Region", "MemoryMap", "parse_memory", "linker_script", "linker_overflow_line",
           "KINDS", "HOLDS", "ALIGN"]

KINDS = ("code", "ram", "rom")
HOLDS = ("code", "ram", "const", "arena")
ALIGN = 16  # bytes: every output section and every constant array is aligned to this
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_DEFAULTS = {"stack_bytes": 0x4000, "heap_bytes": 0x400, "code_bytes": 0x10000}


def align(n: int) -> int:
    """``n`` rounded up to :data:`ALIGN` bytes."""
    return (int(n) + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class Region:
    """One address range of a board (see the module docstring for the fields)."""

    name: str
    origin: int
    length: int
    kind: str
    speed: int
    holds: tuple[str, ...]

    @property
    def ld_name(self) -> str:
        """The name of the region in the linker script's MEMORY block (upper case)."""
        return self.name.upper()

    @property
    def end(self) -> int:
        return self.origin + self.length

    def section(self, what: str) -> str:
        """The input section a model array placed here is put in: ``.tabula_<name>_rodata`` for
        ``what == "const"``, ``.tabula_<name>_bss`` for ``"arena"`` (NOLOAD, not zeroed)."""
        return f".tabula_{self.name}_{'rodata' if what == 'const' else 'bss'}"


@dataclass(frozen=True)
class MemoryMap:
    """A board's regions (declaration order) and the room kept for the runtime.

    ``stack_bytes``, ``heap_bytes``: reserved at the top / after .bss of the ``ram`` region;
    ``code_bytes``: kept in the ``code`` region for everything that is not a model constant."""

    board: str
    regions: tuple[Region, ...]
    stack_bytes: int
    heap_bytes: int
    code_bytes: int

    def region(self, name: str) -> Region:
        return next(r for r in self.regions if r.name == name)

    @property
    def code(self) -> Region:
        """The region that holds code (the linker's ``CODE``)."""
        return next(r for r in self.regions if "code" in r.holds)

    @property
    def ram(self) -> Region:
        """The region that holds .data, .bss, heap and stack (the linker's ``RAM``)."""
        return next(r for r in self.regions if "ram" in r.holds)

    def candidates(self, what: str) -> list[Region]:
        """Regions that may hold ``what`` ("const" or "arena"), fastest first (``speed``, then
        declaration order)."""
        order = {r.name: i for i, r in enumerate(self.regions)}
        return sorted((r for r in self.regions if what in r.holds), key=lambda r: (r.speed, order[r.name]))

    def default_region(self, what: str) -> Region:
        """Where an array without a section attribute goes: constants to ``.rodata`` (the code
        region), the arena to ``.bss`` (the ram region)."""
        return self.code if what == "const" else self.ram

    def locate(self, address: int) -> Region | None:
        """The region holding ``address``, or None."""
        return next((r for r in self.regions if r.origin <= address < r.end), None)


def parse_memory(table: dict, board: str, where: str = "board.toml") -> MemoryMap:
    """Read and check a board.toml ``[memory]`` table.

    Raises:
        ValueError: one line naming ``where``, the region and what is wrong (an unknown kind or
            holds entry, a missing origin/length, overlapping regions, no or two code/ram regions,
            constants in RAM on a board that boots from flash).
    """
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{where}: no [memory] table; declare the board's regions there (see python/tabula/memory.py)")
    settings = {k: v for k, v in table.items() if not isinstance(v, dict)}
    unknown = sorted(set(settings) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"{where}: [memory] keys {', '.join(unknown)} are unknown; the settings are "
                         f"{', '.join(_DEFAULTS)} and every other key is a region table")
    regions = []
    for name, spec in table.items():
        if not isinstance(spec, dict):
            continue
        if not _NAME.match(name) or name in ("code", "ram"):
            raise ValueError(f"{where}: region name {name!r} must be a lower-case identifier other than code/ram")
        missing = [k for k in ("origin", "length", "kind", "speed", "holds") if k not in spec]
        if missing:
            raise ValueError(f"{where}: [memory] region {name} lacks {', '.join(missing)}")
        extra = sorted(set(spec) - {"origin", "length", "kind", "speed", "holds"})
        if extra:
            raise ValueError(f"{where}: [memory] region {name} has unknown keys {', '.join(extra)}")
        holds = tuple(spec["holds"])
        if spec["kind"] not in KINDS:
            raise ValueError(f"{where}: region {name}: kind {spec['kind']!r} is not one of {', '.join(KINDS)}")
        bad = [h for h in holds if h not in HOLDS]
        if bad:
            raise ValueError(f"{where}: region {name}: holds {bad} is not a subset of {', '.join(HOLDS)}")
        if spec["kind"] == "rom" and {"ram", "arena"} & set(holds):
            raise ValueError(f"{where}: region {name} is rom and cannot hold ram or arena")
        if int(spec["length"]) <= 0 or int(spec["origin"]) < 0 or int(spec["speed"]) < 0:
            raise ValueError(f"{where}: region {name}: origin and speed must be >= 0, length > 0")
        regions.append(Region(name, int(spec["origin"]), int(spec["length"]), spec["kind"], int(spec["speed"]), holds))
    for what in ("code", "ram"):
        n = sum(what in r.holds for r in regions)
        if n != 1:
            raise ValueError(f"{where}: exactly one [memory] region must hold {what!r} ({n} do)")
    ordered = sorted(regions, key=lambda r: r.origin)
    for a, b in zip(ordered, ordered[1:]):
        if a.end > b.origin:
            raise ValueError(f"{where}: regions {a.name} and {b.name} overlap")
    if any(r.kind == "rom" for r in regions):
        loaded_ram = [r.name for r in regions if r.kind != "rom" and "const" in r.holds]
        if loaded_ram:
            raise ValueError(f"{where}: region(s) {', '.join(loaded_ram)} hold const, but this board boots from "
                             "flash: only rom is programmed, constants must go there")
    mm = MemoryMap(board, tuple(regions), *(int(settings.get(k, d)) for k, d in _DEFAULTS.items()))
    if mm.code.length < mm.code_bytes:
        raise ValueError(f"{where}: code_bytes {mm.code_bytes} exceeds region {mm.code.name} ({mm.code.length} bytes)")
    if mm.ram.length < mm.stack_bytes + mm.heap_bytes:
        raise ValueError(f"{where}: stack_bytes + heap_bytes exceed region {mm.ram.name} ({mm.ram.length} bytes)")
    return mm


def linker_script(mm: MemoryMap, source: str = "board.toml") -> str:
    """The linker-script part generated from ``mm`` (``tabula_memory.ld``; a board's ``linker.ld``
    INCLUDEs it before ``boards/_shared/cortex_m_sections.ld``): stack and heap sizes, the MEMORY
    block, ``CODE``/``RAM`` as REGION_ALIASes, and an output section per region for the model's
    constants (``.tabula_<region>_rodata``, loaded) and arena (``.tabula_<region>_bss``, NOLOAD)
    placed outside ``.rodata``/``.bss``.  These come first: the first rule naming an input section
    places it."""
    lines = [
        f"/* Generated by tabula from {source} [memory] -- do not edit (python/tabula/memory.py). */",
        f"__stack_size = {mm.stack_bytes:#x};",
        f"__heap_size = {mm.heap_bytes:#x};",
        "",
        "MEMORY",
        "{",
    ]
    width = max(len(r.ld_name) for r in mm.regions)
    for r in mm.regions:
        attrs = "rw" if r.kind == "ram" else "rx"
        lines.append(f"    {r.ld_name:<{width}} ({attrs}) : ORIGIN = {r.origin:#010x}, LENGTH = {r.length:#010x}")
    lines += ["}", "", f'REGION_ALIAS("CODE", {mm.code.ld_name});', f'REGION_ALIAS("RAM", {mm.ram.ld_name});', ""]
    body = []
    for r in mm.regions:
        if "const" in r.holds and r is not mm.code:
            s = r.section("const")
            body += [f"    {s} : ALIGN({ALIGN})", "    {", f"        *({s} {s}.*)", f"    }} > {r.ld_name}", ""]
        if "arena" in r.holds and r is not mm.ram:
            s = r.section("arena")
            # NOLOAD and `AT > itself`: no file contents, PhysAddr == VirtAddr (no overlapping PT_LOAD)
            body += [f"    {s} (NOLOAD) : ALIGN({ALIGN})", "    {", f"        *({s} {s}.*)",
                     f"    }} > {r.ld_name} AT > {r.ld_name}", ""]
    if body:
        lines += ["SECTIONS", "{", *body[:-1], "}"]
    return "\n".join(lines) + "\n"


_OVERFLOW = re.compile(r"region [`'](\w+)' overflowed by (\d+) bytes")
_OVERLAP = re.compile(r"section (\S+) VMA \[([0-9a-fA-F]+),([0-9a-fA-F]+)\] overlaps section (\S+) VMA "
                      r"\[([0-9a-fA-F]+),([0-9a-fA-F]+)\]")
_RAM_ASSERT = "RAM overflow:"


def linker_overflow_line(output: str, mm: MemoryMap) -> str | None:
    """The linker's "region `X' overflowed by N bytes" (and the RAM assertion of
    cortex_m_sections.ld, where .bss runs into the stack) in ``output`` as one line naming the
    board.toml region, the bytes needed and the budget; None when ``output`` has no overflow.
    This happens only when the code outgrows codegen's estimate (``code_bytes``) or hand-written
    C adds to what codegen placed; the fix is in the line."""
    by_ld = {r.ld_name: r for r in mm.regions} | {"CODE": mm.code, "RAM": mm.ram}
    need: dict[str, int] = {}
    for name, n in _OVERFLOW.findall(output):
        r = by_ld.get(name)
        if r is not None and int(n) > 0:
            need[r.name] = max(need.get(r.name, 0), r.length + int(n))
    # The stack sits at a fixed address at the top of RAM: ld then reports "overflowed by 0 bytes" and
    # the sections that run into it; what RAM needs is their end plus the heap and the stack.
    ram = mm.ram
    ends = [int(m[i + 2], 16) for m in _OVERLAP.findall(output) for i in (0, 3)
            if m[i] not in (".stack", ".heap") and ram.origin <= int(m[i + 1], 16) < ram.end]
    if ends:
        need[ram.name] = max(need.get(ram.name, 0), max(ends) + 1 - ram.origin + mm.heap_bytes + mm.stack_bytes)
    if not need:
        if _RAM_ASSERT not in output:
            return None
        return (f"the firmware does not fit {mm.board}'s region {ram.name}: .data + .bss + heap + stack need more than "
                f"its {ram.length} bytes; make the model's arena smaller, or lower stack_bytes ({mm.stack_bytes}) in "
                f"boards/{mm.board}/board.toml [memory]")
    parts = [f"region {name} needs {n} bytes, its budget is {mm.region(name).length} bytes" for name, n in need.items()]
    if mm.code.name in need:
        hint = (f"the code outgrew the {mm.code_bytes} bytes codegen keeps for it: raise code_bytes in "
                f"boards/{mm.board}/board.toml [memory] so the model's constants move to other regions")
    else:
        hint = (f"what is not the model's arena (.data, .bss of the runtime and board, heap {mm.heap_bytes}, stack "
                f"{mm.stack_bytes}) outgrew what codegen keeps for it: lower stack_bytes in boards/{mm.board}/board.toml "
                "[memory] or make the model's inputs or arena smaller")
    return f"the firmware does not fit {mm.board}: {'; '.join(parts)} ({hint})"
