"""IR pass: remove the data movement that layout ops undo -- TRANSPOSE / RESHAPE chains that cancel,
merged into one op where they do not, and moved through the elementwise ops between them.

A 1-D conv runs on the NHWC view ``[N, 1, L, C]`` of PyTorch's ``[N, C, L]`` and converts back after
itself (``ops/_view1d.py``), so a Conv1d stack reads, between two convs,
``RESHAPE -> TRANSPOSE -> [CLAMP / TABLE / ...] -> TRANSPOSE -> RESHAPE``: two copies that cancel.  Every
rewrite here only moves data, so the integer results are the same by construction:

* **collapse**: a TRANSPOSE that keeps the order of the axes of size > 1 is a RESHAPE.  The maximal chain
  of TRANSPOSE / RESHAPE ops (with a TRANSPOSE in it) from a non-layout tensor ``s`` to a tensor ``t`` is
  one map of element positions (computed on ``arange``): when it keeps the shape and the order, ``t``'s
  readers read ``s``; when it keeps the order, it is one RESHAPE ``s -> t``; when it
  is one permutation of ``s``, one TRANSPOSE ``s -> t``; otherwise it stays.  The model's own chains of
  RESHAPEs stay as they are (their tensors keep the names the report matches to float values; a RESHAPE is
  a ``memmove`` unless the arena happens to place both tensors at one offset).
* **sink**: an elementwise op (CLAMP, TABLE on its data input, a per-tensor RESCALE; ADD, SUB, MUL,
  MAXIMUM, MINIMUM with every input of one shape) whose activation inputs are all written by layout
  chains of the same map from tensors of one shape -- each read by elementwise ops only, which all move
  in turn (an int16 table's two TABLEs read one tensor) -- runs on those sources instead, and the chain
  follows it (the op commutes with any permutation of positions).  Its new output
  is named ``<output>_nhwc_view`` when it is the output's conv view ``[N, 1, L, C]`` of ``[N, C, L]`` (the
  report matches it to the output's float value: :func:`tabula.report.layers.float_counterparts`),
  else ``<output>_moved``.  A MAX_POOL2D / AVG_POOL2D whose windows run along W alone (a 1-D pool on its
  ``[N, C, L, 1]`` view) passes a chain that is one TRANSPOSE keeping W in place: each window is a row in
  both layouts; a PAD passes one TRANSPOSE with its pads permuted.

Attributes naming tensors (an int16 table's or a softmax's group: ``input``, ``output``, ``internal``) follow
the rewrites.  Graph outputs keep their tensors, shapes and layouts (a chain may be re-emitted to write one); a tensor
with other readers keeps its producer.  The rewrites run to a fixed point on a copy; the copy is kept
when it moves fewer TRANSPOSE bytes than the graph (a sink that ends nowhere -- say, into the int32 sum
of an ADD whose other input has no chain -- would move more, and is not kept).  Runs in
:data:`tabula.lowering.pipeline.PASSES`.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from ..ir import Graph, Op, Tensor

__all__ = ["simplify_layout", "transpose_bytes"]

_LAYOUT = frozenset({"TRANSPOSE", "RESHAPE"})
#: Elementwise ops: name -> the input indices that carry activations (None: every input).
_ELEMENTWISE: dict[str, tuple[int, ...] | None] = {
    "CLAMP": (0,), "TABLE": (0,), "RESCALE": (0,),
    "ADD": None, "SUB": None, "MUL": None, "MAXIMUM": None, "MINIMUM": None,
}

#: Pools (a chain moves past one whose windows run along W alone) and PAD (its pads follow their axes):
#: :func:`_sink_pool`.
_POOLS = frozenset({"MAX_POOL2D", "AVG_POOL2D", "PAD"})
_MOVABLE = frozenset(_ELEMENTWISE) | _POOLS


def transpose_bytes(g: Graph) -> int:
    """Bytes every TRANSPOSE of ``g`` writes (what this pass lowers)."""
    return sum(g.tensors[o.outputs[0]].nbytes for o in g.ops if o.op == "TRANSPOSE")


def simplify_layout(g: Graph) -> None:
    """Apply the module's rewrites to ``g`` in place when they lower :func:`transpose_bytes`; else leave
    ``g`` as it is.  The integer outputs are unchanged either way (only data movement is rewritten)."""
    if not any(o.op == "TRANSPOSE" for o in g.ops):
        return
    h = Graph(copy.deepcopy(g.tensors), copy.deepcopy(g.ops), list(g.inputs), list(g.outputs), g.constants,
              dict(g.io_layout))
    merged: set[str] = set()  # tensors a merged chain writes
    for _ in range(4 * len(h.ops) + 4):  # each round shortens a chain or moves one past an op
        changed = _collapse(h, merged)
        changed = _sink(h) or changed
        _drop_dead(h)
        if not changed:
            break
    if transpose_bytes(h) < transpose_bytes(g):
        g.tensors, g.ops = h.tensors, h.ops


# -- chains -----------------------------------------------------------------------------------------
def _producers(g: Graph) -> dict[str, int]:
    return {o.outputs[0]: i for i, o in enumerate(g.ops)}


def _readers(g: Graph) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, o in enumerate(g.ops):
        for n in o.inputs:
            out.setdefault(n, []).append(i)
    return out


def _chain(g: Graph, prod: dict[str, int], name: str) -> tuple[str, list[int]]:
    """``(source, op indices)``: the maximal chain of layout ops ending in the op that writes ``name``
    (first op first), from the tensor ``source`` no layout op writes."""
    ops: list[int] = []
    while name in prod and g.ops[prod[name]].op in _LAYOUT:
        ops.insert(0, prod[name])
        name = g.ops[prod[name]].inputs[0]
    return name, ops


def _positions(g: Graph, source: str, ops: list[int]) -> np.ndarray:
    """Where each element of the chain's output comes from: its values applied to ``arange`` over ``source``."""
    v = np.arange(g.tensors[source].numel, dtype=np.int64).reshape(g.tensors[source].shape)
    for i in ops:
        o = g.ops[i]
        v = np.transpose(v, [int(p) for p in o.attrs["perms"]]) if o.op == "TRANSPOSE" else \
            v.reshape([int(d) for d in o.attrs["shape"]])
    return v


def _as_one_op(shape: tuple[int, ...], pos: np.ndarray) -> tuple[str, dict] | None:
    """The single layout op mapping a tensor of ``shape`` to positions ``pos``: ("RESHAPE", attrs) when the
    order is kept, ("TRANSPOSE", attrs) for a permutation, else None."""
    flat = pos.reshape(-1)
    if np.array_equal(flat, np.arange(flat.size)):
        return "RESHAPE", {"shape": [int(d) for d in pos.shape]}
    if len(shape) != pos.ndim:
        return None
    base = np.arange(flat.size, dtype=np.int64).reshape(shape)
    for perms in itertools.permutations(range(len(shape))):
        if tuple(shape[p] for p in perms) == tuple(pos.shape) and np.array_equal(np.transpose(base, perms), pos):
            return "TRANSPOSE", {"perms": list(perms)}
    return None


def _keeps_order(x: Tensor, perms) -> bool:
    """A TRANSPOSE of ``x`` by ``perms`` that keeps the order of the axes of size > 1: a RESHAPE."""
    moved = [int(p) for p in perms if x.shape[int(p)] != 1]
    return moved == sorted(moved)


def _collapse(g: Graph, merged: set[str]) -> bool:
    """Shorten every layout chain (module doc, *collapse*); True when something changed.  A TRANSPOSE that
    keeps the order becomes a RESHAPE of its own input; a chain is rewritten only when it holds a TRANSPOSE or
    a chain this pass merged (``merged``: the tensors they write; updated): the model's own RESHAPE chains keep
    the names the report matches to float values."""
    prod, readers, changed = _producers(g), _readers(g), False
    for i, op in enumerate(g.ops):
        if op.op == "TRANSPOSE" and _keeps_order(g.tensors[op.inputs[0]], op.attrs["perms"]):
            g.ops[i] = op = Op("RESHAPE", list(op.inputs), list(op.outputs),
                               {"shape": list(g.tensors[op.outputs[0]].shape)}, op.source)
            changed = True
        if op.op not in _LAYOUT:
            continue
        out = op.outputs[0]
        source, ops = _chain(g, prod, out)
        if len(ops) < 2 or all(g.ops[j].op == "RESHAPE" and g.ops[j].outputs[0] not in merged for j in ops):
            continue
        pos = _positions(g, source, ops)
        one = _as_one_op(g.tensors[source].shape, pos)
        if one is None:
            continue
        kind, attrs = one
        same = kind == "RESHAPE" and tuple(pos.shape) == tuple(g.tensors[source].shape)
        if same and out not in g.outputs and readers.get(out):
            for j in readers[out]:
                g.ops[j].inputs = [source if n == out else n for n in g.ops[j].inputs]
                _rename_refs(g.ops[j], out, source)
            readers[source] = readers.get(source, []) + readers.pop(out)
        else:
            g.ops[i] = Op(kind, [source], [out], attrs, op.source)
            prod[out] = i
            merged.add(out)
        changed = True
    return changed


# -- sinking ----------------------------------------------------------------------------------------
def _sink(g: Graph) -> bool:
    """Move one layout chain past the first elementwise op or pool it can pass (module doc, *sink*)."""
    prod, readers = _producers(g), _readers(g)
    for e, op in enumerate(g.ops):
        if op.op in _POOLS:
            if _sink_pool(g, prod, readers, e):
                return True
            continue
        if op.op not in _ELEMENTWISE:
            continue
        which = _ELEMENTWISE[op.op]
        if op.op == "RESCALE" and len(op.attrs.get("multiplier", [])) != 1:
            continue  # per-channel: the channel axis is the layout's
        idx = list(range(len(op.inputs))) if which is None else list(which)
        if any(g.tensors[n].const for k, n in enumerate(op.inputs) if k in idx):
            continue
        if which is None and len({tuple(g.tensors[n].shape) for n in op.inputs}) != 1:
            continue
        chains = []
        for k in idx:
            a = op.inputs[k]
            if a in g.outputs or any(g.ops[j].op not in _MOVABLE for j in readers.get(a, [])):
                break  # a reader that keeps the layout would keep the chain
            source, ops = _chain(g, prod, a)
            if not any(g.ops[j].op == "TRANSPOSE" for j in ops):
                break  # a chain of RESHAPEs moves no TRANSPOSE past it
            chains.append((k, source, ops))
        else:
            shapes = {tuple(g.tensors[s].shape) for _, s, _ in chains}
            if len(shapes) == 1:
                maps = [_positions(g, s, ops) for _, s, ops in chains]
                if all(np.array_equal(maps[0], m) for m in maps[1:]):
                    _move_past(g, e, chains)
                    return True
    return False


def _sink_pool(g: Graph, prod, readers, e: int) -> bool:
    """A PAD reading a chain that is one TRANSPOSE: it pads the source on the axes the TRANSPOSE moves its
    pads to, and the TRANSPOSE follows it.  A pool whose window runs along W alone (kernel, stride 1 and no padding on H) reading a chain that is one
    TRANSPOSE keeping W in place: every window is a row of the other three axes in either layout, so the pool
    runs on the chain's source and the TRANSPOSE follows it."""
    op = g.ops[e]
    a, at = op.inputs[0], op.attrs
    if op.op != "PAD" and (int(at["kernel"][0]) != 1 or int(at["stride"][0]) != 1 or [int(v) for v in at["pad"][:2]] != [0, 0]):
        return False
    if a in g.outputs or g.tensors[a].const or any(g.ops[j].op not in _MOVABLE for j in readers.get(a, [])):
        return False
    source, ops = _chain(g, prod, a)
    if not ops:
        return False
    one = _as_one_op(g.tensors[source].shape, _positions(g, source, ops))
    if one is None or one[0] != "TRANSPOSE" or (op.op != "PAD" and one[1]["perms"][2] != 2):
        return False
    perms = one[1]["perms"]
    out = g.tensors[op.outputs[0]]
    shape = [0] * len(perms)
    for i, p in enumerate(perms):
        shape[p] = out.shape[i]
    if op.op == "PAD":  # the pads follow their axes
        for key in ("pad_before", "pad_after"):
            v = [0] * len(perms)
            for i, p in enumerate(perms):
                v[p] = int(at[key][i])
            op.attrs = {**op.attrs, key: v}
    moved = _add(g, f"{out.name}_moved", shape, out)
    _rename_refs(op, a, source)
    op.inputs[0], op.outputs = source, [moved.name]
    for other in g.ops:
        _rename_refs(other, out.name, moved.name)
    g.ops.insert(e + 1, Op("TRANSPOSE", [moved.name], [out.name], {"perms": list(perms)}, g.ops[ops[-1]].source))
    return True


def _move_past(g: Graph, e: int, chains) -> None:
    """Op ``e`` reads the chains' sources; the first chain's ops, re-emitted on its output, write its old output."""
    op = g.ops[e]
    out = g.tensors[op.outputs[0]]
    _, source, ops = chains[0]
    src_shape = tuple(g.tensors[source].shape)
    pos = _positions(g, source, ops)
    nhwc = len(src_shape) == 4 and len(out.shape) == 3 and src_shape[1] == 1 and np.array_equal(
        pos, np.arange(pos.size).reshape(src_shape[0], src_shape[2], src_shape[3]).transpose(0, 2, 1))
    moved = _add(g, f"{out.name}_{'nhwc_view' if nhwc else 'moved'}", src_shape, out)
    for k, s, _ in chains:
        _rename_refs(op, op.inputs[k], s)
        op.inputs[k] = s
    op.outputs = [moved.name]
    for other in g.ops:
        _rename_refs(other, out.name, moved.name)
    new, cur = [], moved.name
    for n, i in enumerate(ops):
        lay = g.ops[i]
        last = n == len(ops) - 1
        dst = out.name if last else _add(g, f"{out.name}_{lay.op.lower()}", g.tensors[lay.outputs[0]].shape, out).name
        new.append(Op(lay.op, [cur], [dst], dict(lay.attrs), lay.source))
        cur = dst
    g.ops[e + 1:e + 1] = new


def _rename_refs(op: Op, old: str, new: str) -> None:
    """Where ``op``'s attributes name tensor ``old`` -- a group's ``input`` / ``output`` / ``internal`` (an int16
    table op, a softmax: codegen fuses the group by these names) -- they name ``new``."""
    a = op.attrs
    if not any(k in a for k in _REFS):
        return
    a = dict(a)
    for k in ("input", "output"):
        if a.get(k) == old:
            a[k] = new
    if "internal" in a:
        a["internal"] = [new if n == old else n for n in a["internal"]]
    op.attrs = a


#: The attributes that name tensors.
_REFS = ("input", "output", "internal")


def _add(g: Graph, base: str, shape, like: Tensor) -> Tensor:
    name, i = base, 1
    while name in g.tensors:
        name, i = f"{base}_{i}", i + 1
    return g.add_tensor(Tensor(name, tuple(int(d) for d in shape), like.dtype, like.scale, like.zero_point,
                               qrange=like.qrange))


def _drop_dead(g: Graph) -> None:
    """Remove layout ops nothing reads (and not graph outputs), then tensors no op, input or output names."""
    while True:
        read = {n for o in g.ops for n in o.inputs} | set(g.outputs)
        keep = [o for o in g.ops if o.op not in _LAYOUT or o.outputs[0] in read]
        if len(keep) == len(g.ops):
            break
        g.ops = keep
    used = {n for o in g.ops for n in (*o.inputs, *o.outputs)} | set(g.inputs) | set(g.outputs)
    for name in [n for n, t in g.tensors.items() if n not in used and not t.const]:
        del g.tensors[name]
