"""Codegen fusion of a PAD into the convolution that reads it: a zero-point PAD of H and W read only by a
CONV2D / DEPTHWISE_CONV2D becomes that op's own padding (no padded copy)."""
from __future__ import annotations

from ...ir import Graph, Op
from ._graph import consumers_of, rebuild

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {}


def fuse_pad(g: Graph) -> Graph:
    """A copy of ``g`` in which every PAD of the height and width only (NHWC ``pad_before`` /
    ``pad_after`` ``[0, t, l, 0]`` / ``[0, b, r, 0]``) with the reader's input zero point as its value,
    read only by a CONV2D or DEPTHWISE_CONV2D as its input, is folded into that op's own ``pad``
    (``[top + t, bottom + b, left + l, right + r]``): the kernels treat padded taps as the input zero
    point, exactly what the PAD wrote, so the results are the same bits with no padded copy in the
    arena and no copying pass (TFLite's SAME padding of a stride-2 conv, exported as ``F.pad``).
    A PAD whose output is a graph output or has another reader stays.  ``g`` is not modified."""
    consumers = consumers_of(g)
    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    for i, op in enumerate(g.ops):
        if op.op != "PAD":
            continue
        out = op.outputs[0]
        cs = consumers.get(out, [])
        if out in g.outputs or len(cs) != 1 or cs[0] in replace:
            continue
        c = g.ops[cs[0]]
        pb, pa = [int(v) for v in op.attrs["pad_before"]], [int(v) for v in op.attrs["pad_after"]]
        if (c.op not in ("CONV2D", "DEPTHWISE_CONV2D") or c.inputs[0] != out or len(pb) != 4
                or pb[0] or pb[3] or pa[0] or pa[3] or int(op.attrs["pad_value"]) != int(c.attrs.get("input_zp", 0))):
            continue
        pt, pbot, pl, pr = (int(v) for v in c.attrs["pad"])
        pad = [pt + pb[1], pbot + pa[1], pl + pb[2], pr + pa[2]]
        replace[cs[0]] = Op(c.op, [op.inputs[0], *c.inputs[1:]], list(c.outputs), {**c.attrs, "pad": pad}, c.source)
        drop.add(i)
        removed.add(out)
    if not replace:
        return g
    return rebuild(g, replace, drop, removed, {})
