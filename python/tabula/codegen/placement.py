"""Memory placement: which of the board's regions holds each constant array and each part of the arena.

The regions come from ``board.toml [memory]`` (:class:`tabula.memory.MemoryMap`); the sizes from
codegen (every constant array, every activation and its live range).  Decided at codegen time, so
a model that does not fit is refused before anything is compiled or linked.

**Budgets.**  A region's budget is its length less what the runtime keeps there: in the code
region ``code_bytes`` (the estimate of vectors + .text + the runtime's .rodata and .data's load
image); in the ram region the stack, the heap, the runtime's receive buffer (the model's input
bytes, at least 64) and :data:`RUNTIME_RAM_BYTES` for its other statics.  Every array is counted
rounded up to 16 bytes (its alignment).

**Arena first** (every op reads and writes it): planned whole (:func:`.arena.plan_arena`) in the
fastest region that may hold arena.  While a part is larger than its region's budget, the
largest tensor live together with the part's topmost tensor moves on to the next region (fastest
first: ``speed``, then board.toml order), and both parts are planned again; the arena ends up in
one part per region it uses, each a C array of its own.

**Then the constants**, smallest first (TABLEs, biases, multipliers and shifts are read many times
per byte), each into the fastest region with room left; big weights land where they fit (on
corstone300: ITCM, DTCM, then SRAM, FPGA SRAM, DDR).

**Sections.**  An array in its default place -- a constant in the code region (``.rodata``), the
arena in the ram region (``.bss``) -- gets no attribute, so a model that fits there generates the C
it generated before placement existed.  Elsewhere it gets
``__attribute__((section(".tabula_<region>_rodata")))`` (loaded) or ``".tabula_<region>_bss"``
(NOLOAD, not zeroed: every tensor is written before it is read); the generated linker script
(:func:`tabula.memory.linker_script`) places those sections in their regions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import StageError
from ..ir import Graph
from ..memory import MemoryMap, align
from .arena import ArenaPlan, live_ranges, plan_arena

__all__ = ["ArenaPart", "Placement", "place", "RUNTIME_RAM_BYTES"]

#: The runtime's statics besides its receive buffer (frame state, tick counter, board name): the
#: digits firmware has 80 bytes of them; 1 KiB keeps room for a board's own driver state.
RUNTIME_RAM_BYTES = 1024
#: The smallest receive buffer the runtime allocates (firmware_templates/runtime/main.c RX_CAPACITY).
MIN_RX_BYTES = 64


@dataclass
class ArenaPart:
    """One contiguous arena array: its region (None without a board), C name, section attribute
    (None: the default ``.bss``) and its plan (offsets of the tensors it holds)."""

    region: str | None
    cname: str
    section: str | None
    plan: ArenaPlan


@dataclass
class Placement:
    """Where everything goes.  ``parts[tensor_part[t]]`` holds activation ``t`` at
    ``parts[...].plan.offsets[t]``; ``const_region[k]`` / ``const_section[k]`` for constant array
    ``k``; ``regions``: per region of the board, its budget and what placement put there (bytes)."""

    parts: list[ArenaPart]
    tensor_part: dict[str, int]
    const_region: dict[str, str | None]
    const_section: dict[str, str | None]
    regions: list[dict] = field(default_factory=list)
    #: arrays whose region was imposed (an NPU build's command streams, weights and scratch): C name ->
    #: section attribute (None: the region's default section)
    fixed_section: dict[str, str | None] = field(default_factory=dict)

    @property
    def arena_bytes(self) -> int:
        """Total bytes of every arena part."""
        return sum(p.plan.size for p in self.parts)

    def location(self, tensor: str) -> tuple[int, int] | None:
        """(part index, byte offset) of an activation; None for a constant."""
        i = self.tensor_part.get(tensor)
        return None if i is None else (i, self.parts[i].plan.offsets[tensor])

    def to_json(self) -> dict:
        """The placement as written to ``src/arena.json`` (``memory``) and ``results.json``."""
        return {
            "regions": self.regions,
            "arena_parts": [dict(region=p.region, array=p.cname, section=p.section, bytes=p.plan.size)
                            for p in self.parts],
            "constants": {k: r for k, r in self.const_region.items()},
            **({"fixed": {k: s for k, s in self.fixed_section.items()}} if self.fixed_section else {}),
        }


def _budgets(mm: MemoryMap, input_bytes: int) -> tuple[dict[str, int], dict[str, int]]:
    reserved = {r.name: 0 for r in mm.regions}
    reserved[mm.code.name] += mm.code_bytes
    rx = align(max(MIN_RX_BYTES, input_bytes))
    reserved[mm.ram.name] += mm.stack_bytes + mm.heap_bytes + rx + RUNTIME_RAM_BYTES
    return reserved, {r.name: r.length - reserved[r.name] for r in mm.regions}


def _refuse(mm: MemoryMap, model: str, region: str, what: str, need: int, budget: int, detail: str) -> StageError:
    """The one-line error: region, bytes needed, budget (and what the runtime keeps there), the fix."""
    r = mm.region(region)
    kept = []
    if r is mm.code:
        kept.append(f"{mm.code_bytes} kept for code")
    if r is mm.ram:
        buffers = r.length - budget - mm.stack_bytes - mm.heap_bytes - (mm.code_bytes if r is mm.code else 0)
        kept.append(f"{mm.stack_bytes} for the stack, {mm.heap_bytes} for the heap, {buffers} for the runtime's buffers")
    length = f"{r.length} bytes less {', '.join(kept)}; " if kept else ""
    return StageError(
        f"{model} does not fit {mm.board}: region {region} needs {need} bytes for {what}, its budget is {budget} "
        f"bytes ({length}{detail}); make the model smaller, or give boards/{mm.board}/board.toml [memory] "
        f"more room for {what}"
    )


def _what_is_left(largest: str, count: int, noun: str, nbytes: int, faster: list[str]) -> str:
    """E.g. "2 constant arrays that itcm, dtcm had no room for, the largest fc_weight of 1048576 bytes"."""
    where = f" that {', '.join(faster)} had no room for" if faster else ""
    if count == 1:
        return f"{noun} {largest} of {nbytes} bytes{where}"
    return f"{count} {noun}s{where}, the largest {largest} of {nbytes} bytes"


def _split_arena(g: Graph, mm: MemoryMap, free: dict[str, int], model: str):
    """[(region, tensors, plan)] for every region that may hold arena, fastest first (see the module
    docstring); ``free`` loses what each part takes.  StageError when the last region overflows."""
    regions = mm.candidates("arena")
    if not regions:
        raise StageError(f"boards/{mm.board}/board.toml [memory]: no region holds arena")
    live = live_ranges(g)
    sizes = {n: align(g.tensors[n].nbytes) for n in live}
    members: list[set[str]] = [set(live)] + [set() for _ in regions[1:]]
    plans = [plan_arena(g, members[0])] + [plan_arena(g, set()) for _ in regions[1:]]
    for i, r in enumerate(regions):
        while plans[i].size > free[r.name]:
            if i + 1 == len(regions):
                biggest = max(members[i], key=lambda n: (sizes[n], n))
                t = g.tensors[biggest]
                raise _refuse(mm, model, r.name, "arena", plans[i].size, free[r.name],
                              _what_is_left(f"{biggest} {list(t.shape)} {t.dtype}", len(members[i]), "activation",
                                            sizes[biggest], [q.name for q in regions[:-1]]))
            top = max(members[i], key=lambda n: (plans[i].offsets[n] + sizes[n], n))
            t0, t1 = live[top]
            together = [n for n in members[i] if not (live[n][1] < t0 or t1 < live[n][0])]
            move = max(together, key=lambda n: (sizes[n], n))
            members[i].discard(move)
            members[i + 1].add(move)
            plans[i] = plan_arena(g, members[i])
            plans[i + 1] = plan_arena(g, members[i + 1])
        free[r.name] -= plans[i].size
    return list(zip(regions, members, plans))


def place(g: Graph, const_bytes: dict[str, int], memory: MemoryMap | None = None, model: str = "the model",
          fixed: dict[str, tuple[str, int, str]] | None = None) -> Placement:
    """Place the arena of ``g`` and the constant arrays ``const_bytes`` (C array key -> bytes) in
    the regions of ``memory`` (see the module docstring).  Without ``memory`` (no board): one arena
    part, every array in its default section.  ``fixed``: arrays whose region is imposed, C name ->
    ``(region, bytes, "const" | "arena")`` (an NPU build's command streams and weights, its scratch:
    :func:`tabula.codegen.npu.npu_arrays`); they take their bytes from those regions' budgets first, and
    ``regions`` reports them as ``npu`` bytes.

    Raises:
        StageError: one line naming the region that overflows, the bytes it would need and its
            budget (before anything is compiled or linked).
    """
    if memory is None:
        plan = plan_arena(g)
        return Placement([ArenaPart(None, "tabula_arena", None, plan)], {n: 0 for n in plan.offsets},
                         {k: None for k in const_bytes}, {k: None for k in const_bytes})
    mm = memory
    input_bytes = sum(g.tensors[n].nbytes for n in g.inputs)
    reserved, free = _budgets(mm, input_bytes)
    for r in mm.regions:
        if free[r.name] < 0:
            raise StageError(f"boards/{mm.board}/board.toml [memory]: region {r.name} ({r.length} bytes) is smaller "
                             f"than what the runtime keeps there ({reserved[r.name]} bytes)")
    fixed_section: dict[str, str | None] = {}
    npu_bytes = {r.name: 0 for r in mm.regions}
    for k, (region, nbytes, kind) in sorted((fixed or {}).items()):
        names = {r.name for r in mm.regions}
        if region not in names:
            raise StageError(f"boards/{mm.board}/board.toml: {k} goes to region {region!r}, which [memory] does not have")
        n = align(nbytes)
        if n > free[region]:
            raise _refuse(mm, model, region, "the NPU's command streams, weights and scratch", npu_bytes[region] + n,
                          free[region] + npu_bytes[region], f"array {k} of {nbytes} bytes")
        free[region] -= n
        npu_bytes[region] += n
        r = mm.region(region)
        what = "const" if kind == "const" else "arena"
        fixed_section[k] = None if r is mm.default_region(what) else r.section(what)
    budget = dict(free)

    parts, tensor_part = [], {}
    for r, members, plan in _split_arena(g, mm, free, model):
        if not members and parts:
            continue
        default = r is mm.default_region("arena")
        cname = "tabula_arena" if not parts else f"tabula_arena_{r.name}"
        parts.append(ArenaPart(r.name, cname, None if default else r.section("arena"), plan))
        tensor_part.update({n: len(parts) - 1 for n in members})

    const_region: dict[str, str | None] = {}
    candidates = mm.candidates("const")
    if const_bytes and not candidates:
        raise StageError(f"boards/{mm.board}/board.toml [memory]: no region holds const")
    overflow = []
    for k in sorted(const_bytes, key=lambda k: (align(const_bytes[k]), k)):
        n = align(const_bytes[k])
        r = next((r for r in candidates if free[r.name] >= n), None)
        if r is None:
            overflow.append(k)
            continue
        free[r.name] -= n
        const_region[k] = r.name
    if overflow:
        last = candidates[-1]
        need = budget[last.name] - free[last.name] + sum(align(const_bytes[k]) for k in overflow)
        biggest = max(overflow, key=lambda k: (const_bytes[k], k))
        faster = [r.name for r in candidates[:-1]]
        raise _refuse(mm, model, last.name, "constants", need, budget[last.name],
                      _what_is_left(biggest, len(overflow), "constant array", const_bytes[biggest], faster))
    const_region = {k: const_region[k] for k in const_bytes}  # codegen's order
    const_section = {k: (None if r == mm.default_region("const").name else mm.region(r).section("const"))
                     for k, r in const_region.items()}

    regions = []
    for r in mm.regions:
        consts = [k for k, rr in const_region.items() if rr == r.name]
        arena = sum(p.plan.size for p in parts if p.region == r.name)
        regions.append(dict(name=r.name, origin=r.origin, length=r.length, speed=r.speed, reserved=reserved[r.name],
                            budget=budget[r.name], constants=sum(align(const_bytes[k]) for k in consts),
                            n_constants=len(consts), arena=arena, **({"npu": npu_bytes[r.name]} if fixed else {})))
    return Placement(parts, tensor_part, const_region, const_section, regions, fixed_section)
