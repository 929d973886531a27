"""Static arena planning: give every non-constant tensor a byte offset in one buffer.

Liveness: a tensor is live from the op that defines it (graph inputs: before op 0) to its last use
(graph outputs: past the last op, so the host can read them).  Tensors with overlapping live ranges
never overlap in memory.  Placement: greedy, each tensor at the lowest
offset, aligned to :data:`ALIGN` bytes, that clashes with no placed tensor live at the same time.
The result is optimal for chains and close to the live-set lower bound (reported beside it).
Several placement orders are tried (:data:`ORDERS`); the smallest arena wins.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph

ALIGN = 16  # bytes; enough for any kernel's vector loads


@dataclass
class ArenaPlan:
    """``offsets``: tensor name -> byte offset; ``size``: arena bytes; ``lower_bound``: the largest
    sum of live tensor bytes at any op (no plan can be smaller)."""

    offsets: dict[str, int]
    size: int
    lower_bound: int


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def live_ranges(g: Graph) -> dict[str, tuple[int, int]]:
    """Every non-constant tensor of ``g`` -> (first op index, last op index) it is live at; graph
    inputs start at -1, graph outputs end at ``len(g.ops)``."""
    end = len(g.ops)
    first: dict[str, int] = {n: -1 for n in g.inputs}
    last: dict[str, int] = {}
    for i, op in enumerate(g.ops):
        for n in op.outputs:
            first.setdefault(n, i)
            last.setdefault(n, i)
        for n in op.inputs:
            if not g.tensors[n].const:
                last[n] = i
    for n in g.outputs:
        last[n] = end
    for n in g.inputs:
        last.setdefault(n, -1)
    return {n: (first[n], last[n]) for n in first if not g.tensors[n].const}


#: The orders tensors are placed in (each a sort key over ``(name, sizes, live ranges)``); the plan
#: keeps the smallest arena, the first order on a tie.  Largest first suits chains; the longest-lived
#: first wins on residual blocks, where a skip tensor outlives the branch beside it (ResNet-8 with its
#: PADs as separate ops: 65,536 B largest first, 49,152 B -- the lower bound -- longest-lived first).
ORDERS = (
    lambda k, size, live: (-size[k], live[k][0], k),
    lambda k, size, live: (live[k][0], -size[k], k),
    lambda k, size, live: (-(live[k][1] - live[k][0]), -size[k], k),
    lambda k, size, live: (-size[k] * (live[k][1] - live[k][0] + 1), k),
)


def _place(order: list[str], size_of: dict[str, int], live: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Offsets of the tensors placed in ``order``, each at the lowest aligned offset that clashes with
    no placed tensor live at the same time."""
    placed: list[tuple[int, int, str]] = []  # (offset, size, name)
    offsets: dict[str, int] = {}
    for n in order:
        a0, a1 = live[n]
        clashes = sorted((o, s) for o, s, m in placed if not (live[m][1] < a0 or a1 < live[m][0]))
        off = 0
        for o, s in clashes:
            if off + size_of[n] <= o:
                break
            off = max(off, o + s)
        offsets[n] = off
        placed.append((off, size_of[n], n))
    return offsets


def plan_arena(g: Graph, only=None) -> ArenaPlan:
    """Plan the arena for ``g`` (or for the tensors in ``only``, a part of a split arena: see
    :mod:`.placement`); see the module docstring for the rules."""
    end = len(g.ops)
    live = live_ranges(g)
    if only is not None:
        live = {n: r for n, r in live.items() if n in only}
    names = list(live)
    size_of = {n: _align(g.tensors[n].nbytes) for n in names}

    best: tuple[int, dict[str, int]] | None = None
    for order in ORDERS:
        offsets = _place(sorted(names, key=lambda k: order(k, size_of, live)), size_of, live)
        size = max((offsets[n] + size_of[n] for n in names), default=0)
        if best is None or size < best[0]:
            best = (size, offsets)
    size, offsets = best if best is not None else (0, {})
    bound = 0
    for i in range(-1, end + 1):
        bound = max(bound, sum(g.tensors[n].nbytes for n in names if live[n][0] <= i <= live[n][1]))
    return ArenaPlan(offsets, size, bound)
