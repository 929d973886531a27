"""What ``profile=1`` measures per op: the op list of ``tabula_model_run()`` as codegen emits it (after
fusion: a CONV2D with its RESCALE and CLAMP is one op), with each op's kernel, output shape and
multiply-accumulates, written to ``src/profile.json`` beside ``model.c``; the run stage pairs it with
the per-op ticks the device sends (docs/protocol.md, OUTPUT) into ``results.json`` ``profile``."""
from __future__ import annotations

import re

from ..ir import Graph, Op
from ..reference.ops import TType, specs

__all__ = ["op_entries", "macs"]

_KERNEL = re.compile(r"\b(tabula_(?!board_)\w+)\s*\(")


def macs(op: Op, g: Graph) -> int:
    """Multiply-accumulates of one op: its spec's ``macs`` (:mod:`tabula.reference.ops`; 0 for an op
    without a weighted sum) on the op's input and output types.  Codegen's fused ops keep their IR op's
    name when they are one (a CONV2D with its RESCALE is a CONV2D); its own ops (ADD_REQUANT, TABLE16,
    SOFTMAX) have no spec and no weighted sum: 0."""
    spec = specs().get(op.op)
    if spec is None:
        return 0
    ins = [TType(tuple(g.tensors[n].shape), g.tensors[n].dtype) for n in op.inputs]
    out = g.tensors[op.outputs[0]]
    return int(spec.macs(ins, TType(tuple(out.shape), out.dtype), op.attrs))


def op_entries(g: Graph, codes: list[str]) -> list[dict]:
    """One entry per op of ``g`` (the graph codegen emits, in order) and its rendered C ``codes``:
    ``{index, op, kernel, shape, macs, source}``; ``kernel`` is the first ``tabula_*`` call of the op's
    code (None for an op that calls none, e.g. a reshape that is a no-op), ``shape`` the op's first
    output's shape."""
    out = []
    for i, (op, code) in enumerate(zip(g.ops, codes)):
        m = _KERNEL.search(code)
        out.append({"index": i, "op": op.op, "kernel": m.group(1) if m else None,
                    "shape": [int(d) for d in g.tensors[op.outputs[0]].shape], "macs": macs(op, g),
                    "source": op.source})
    return out
