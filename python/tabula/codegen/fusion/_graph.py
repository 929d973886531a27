"""What the fusion passes share: who reads a tensor, a fused group's ops, rebuilding a graph with a
group replaced by one op, and small pattern checks.  Leaf of :mod:`tabula.codegen.fusion`."""
from __future__ import annotations

from ...ir import Graph, Op

__all__ = ["consumers_of", "fused_group", "rebuild", "only_reader", "fold_clamp", "is_scale"]


def fused_group(g: Graph, consumers: dict[str, list[int]], internal: set[str], out: str) -> list[int] | None:
    """Indices of the ops producing ``internal`` and ``out``, or None when an intermediate is read
    outside them or is a graph output (the group must then stay as it is)."""
    group = [i for i, o in enumerate(g.ops) if set(o.outputs) & (internal | {out})]
    if internal & set(g.outputs) or any(c not in group for n in internal for c in consumers.get(n, [])):
        return None
    return group


def rebuild(g: Graph, replace: dict[int, Op], drop: set[int], removed: set[str], added: dict[str, tuple]) -> Graph:
    """A copy of ``g`` with op ``i`` replaced by ``replace[i]``, the ops in ``drop`` left out, the tensors in
    ``removed`` gone and ``added`` (name -> (Tensor, constant data or None)) new; inputs, outputs and the I/O
    layout as ``g``'s."""
    f = Graph()
    for name, t in g.tensors.items():
        if name not in removed:
            f.add_tensor(t, g.constants.get(name))
    for name, (t, data) in added.items():
        f.add_tensor(t, data)
    for i, op in enumerate(g.ops):
        if i in replace:
            f.add_op(replace[i])
        elif i not in drop:
            f.add_op(op)
    f.inputs, f.outputs, f.io_layout = list(g.inputs), list(g.outputs), dict(g.io_layout)
    return f


def consumers_of(g: Graph) -> dict[str, list[int]]:
    """Tensor name -> the indices of the ops that read it, in graph order."""
    consumers: dict[str, list[int]] = {}
    for i, op in enumerate(g.ops):
        for n in op.inputs:
            consumers.setdefault(n, []).append(i)
    return consumers


def only_reader(g: Graph, consumers: dict[str, list[int]], name: str, kind: str) -> int | None:
    """The index of the one op that reads ``name``, when it is a ``kind`` reading it as its first input
    and ``name`` is not a graph output; else None."""
    cs = consumers.get(name, [])
    if name in g.outputs or len(cs) != 1 or g.ops[cs[0]].op != kind or g.ops[cs[0]].inputs[0] != name:
        return None
    return cs[0]


def fold_clamp(g: Graph, consumers: dict[str, list[int]], out: str, lo: int, hi: int, group: list[int],
                internal: set[str]) -> tuple[str, int, int]:
    """A fused group's output ``out`` with saturation bounds [lo, hi]: when its only reader is a CLAMP,
    that CLAMP joins the group (``group``, ``internal`` updated) and its bounds narrow [lo, hi].
    Returns the group's output tensor and bounds."""
    k = only_reader(g, consumers, out, "CLAMP")
    if k is None:
        return out, lo, hi
    c = g.ops[k]
    group.append(k)
    internal.add(out)
    return c.outputs[0], max(lo, int(c.attrs["min"])), min(hi, int(c.attrs["max"]))


def is_scale(op: Op, multiplier: int, shift: int, input_zp: int | None = 0, output_zp: int | None = 0) -> bool:
    """``op`` is a per-tensor RESCALE by exactly ``multiplier * 2^-shift`` (zero points as given, None: any)."""
    a = op.attrs
    return (op.op == "RESCALE" and list(a["multiplier"]) == [multiplier] and list(a["shift"]) == [shift]
            and (input_zp is None or int(a.get("input_zp", 0)) == input_zp)
            and (output_zp is None or int(a.get("output_zp", 0)) == output_zp) and bool(a.get("scale32", True)))
