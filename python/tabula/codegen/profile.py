"""What ``profile=1`` measures per op: the op list of ``tabula_model_run()`` as codegen emits it (after
fusion: a CONV2D with its RESCALE and CLAMP is one op), with each op's kernel, output shape and
multiply-accumulates, written to ``src/profile.json`` beside ``model.c``; the run stage pairs it with
the per-op ticks the device sends (docs/protocol.md, OUTPUT) into ``results.json`` ``profile``."""
from __future__ import annotations

import re

import numpy as np

from ..ir import Graph, Op

__all__ = ["op_entries", "macs"]

_KERNEL = re.compile(r"\b(tabula_(?!board_)\w+)\s*\(")


def macs(op: Op, g: Graph) -> int:
    """Multiply-accumulates of one op (0 for an op without a weighted sum):
    CONV2D ``N*OH*OW*Cout * KH*KW*Cin``; DEPTHWISE_CONV2D ``N*OH*OW*C*M * KH*KW``; FULLY_CONNECTED
    ``N*Cout*Cin``; MATMUL ``N*H*W*C`` (a ``[N,H,C] x [N,C,W]``)."""
    out = int(np.prod(g.tensors[op.outputs[0]].shape, dtype=np.int64))
    if op.op == "CONV2D":
        _, kh, kw, cin = g.tensors[op.inputs[1]].shape
        return out * kh * kw * cin
    if op.op == "DEPTHWISE_CONV2D":
        kh, kw, _, _ = g.tensors[op.inputs[1]].shape
        return out * kh * kw
    if op.op == "FULLY_CONNECTED":
        return out * int(g.tensors[op.inputs[0]].shape[-1])
    if op.op == "MATMUL":
        return out * int(g.tensors[op.inputs[0]].shape[-1])
    return 0


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
