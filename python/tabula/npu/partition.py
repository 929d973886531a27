"""Mark each IR op NPU or CPU and cut the graph into segments: maximal runs of consecutive ops (in the
graph's execution order) on one engine.

:func:`mark` asks the family's capability table (:mod:`tabula.npu.capabilities`) about every op, then
keeps every int48 value inside one engine: an int16 x int8 CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED
and the RESCALE that reads its int48 accumulator go together (Vela refuses a RESCALE of an int48 value on
its own, and no int48 tensor ever crosses a segment boundary).  :func:`cut` makes the segments and
:func:`subgraph` a segment's own :class:`tabula.ir.Graph` (its inputs: the non-constant tensors it reads
that an earlier segment or the model's input produced, in the order it first reads them; its outputs:
what it produces that a later segment reads or the model returns, in production order), which
:func:`tabula.tosa.serialize` turns into the flatbuffer Vela compiles.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph
from .capabilities import npu_refusal

__all__ = ["Segment", "mark", "cut", "subgraph", "units", "CPU", "NPU"]

NPU, CPU = "npu", "cpu"


@dataclass
class Segment:
    """A run of consecutive ops on one engine: ``ops`` (indices into the graph's op list), ``inputs`` /
    ``outputs`` (IR tensor names, see the module docstring)."""

    index: int
    engine: str
    ops: list[int]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def _int48_groups(g: Graph) -> list[set[int]]:
    """Sets of op indices tied by an int48 tensor (its producer and every reader)."""
    producer = {n: i for i, o in enumerate(g.ops) for n in o.outputs}
    groups: list[set[int]] = []
    for i, o in enumerate(g.ops):
        for n in o.inputs:
            t = g.tensors[n]
            if t.dtype == "int48" and not t.const and n in producer:
                groups.append({producer[n], i})
    merged: list[set[int]] = []
    for grp in groups:
        hit = [m for m in merged if m & grp]
        for m in hit:
            merged.remove(m)
            grp |= m
        merged.append(grp)
    return merged


def units(g: Graph, ops: list[int]) -> list[list[int]]:
    """``ops`` (in order) grouped so that ops tied by an int48 tensor stay together: the pieces a segment
    may be cut into."""
    tie = {}
    for grp in _int48_groups(g):
        for i in grp:
            tie[i] = min(grp)
    out: list[list[int]] = []
    by_key: dict[int, list[int]] = {}
    for i in ops:
        k = tie.get(i)
        if k is None:
            out.append([i])
        elif k in by_key:
            by_key[k].append(i)
        else:
            by_key[k] = [i]
            out.append(by_key[k])
    return out


def mark(g: Graph, family: str) -> tuple[list[str], list[str]]:
    """``(engines, reasons)``: per op ``"npu"`` or ``"cpu"`` and, for a CPU op, why (an NPU op's reason is
    ``""``).  An op the table refuses takes the ops tied to it by an int48 value along."""
    engines, reasons = [], []
    for o in g.ops:
        why = npu_refusal(g, o, family)
        engines.append(CPU if why else NPU)
        reasons.append(why or "")
    tie_int48(g, engines, reasons)
    return engines, reasons


def tie_int48(g: Graph, engines: list[str], reasons: list[str]) -> None:
    """Move every op tied by an int48 value to a CPU op onto the CPU too (in place), and the ops of any
    int48 value split across segments (a CPU op between them)."""
    changed = True
    while changed:
        changed = False
        for grp in _int48_groups(g):
            span = range(min(grp), max(grp) + 1)
            cpu = [i for i in grp if engines[i] == CPU]
            split = len({engines[i] for i in span}) > 1 and not cpu
            if (cpu or split) and any(engines[i] == NPU for i in grp):
                first = cpu[0] if cpu else min(grp)
                for i in grp:
                    if engines[i] == NPU:
                        engines[i] = CPU
                        reasons[i] = (f"keeps the int48 accumulator with op {first} ({g.ops[first].op}) on the CPU"
                                      if cpu else "an int48 value would cross a segment boundary")
                        changed = True


def cut(g: Graph, engines: list[str]) -> list[Segment]:
    """The segments of ``g`` for ``engines`` (one per op), with their inputs and outputs."""
    segs: list[Segment] = []
    for i, e in enumerate(engines):
        if segs and segs[-1].engine == e:
            segs[-1].ops.append(i)
        else:
            segs.append(Segment(len(segs), e, [i]))
    for s in segs:
        s.inputs, s.outputs = _io(g, s.ops)
    return segs


def _io(g: Graph, ops: list[int]) -> tuple[list[str], list[str]]:
    inside = set(ops)
    produced = {n for i in ops for n in g.ops[i].outputs}
    ins: list[str] = []
    for i in ops:
        for n in g.ops[i].inputs:
            if n not in produced and not g.tensors[n].const and n not in ins:
                ins.append(n)
    later = {n for j, o in enumerate(g.ops) if j not in inside for n in o.inputs} | set(g.outputs)
    outs = [n for i in ops for n in g.ops[i].outputs if n in later]
    return ins, outs


def subgraph(g: Graph, ops: list[int]) -> Graph:
    """The ops ``ops`` of ``g`` as a graph of their own (module docstring), sharing ``g``'s tensor
    records and constants."""
    ins, outs = _io(g, ops)
    sg = Graph()
    used = {n for i in ops for n in g.ops[i].inputs + g.ops[i].outputs}
    for n, t in g.tensors.items():
        if n in used:
            sg.add_tensor(t, g.constants.get(n))
    sg.ops = [g.ops[i] for i in ops]
    sg.inputs, sg.outputs = ins, outs
    sg.io_layout = {n: "plain" for n in ins + outs}
    return sg
