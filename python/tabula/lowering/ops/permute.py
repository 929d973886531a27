"""aten.permute / transpose / t -> TRANSPOSE, with the permutation mapped through the NHWC device layout
(``transpose(d0, d1)`` is the permutation that swaps two dims; ``t()`` swaps the two dims of a 2-D tensor)."""
from __future__ import annotations

from ... import rules
from ...fx import node_source
from ...ir import Op

ATEN = ["aten.permute", "aten.transpose", "aten.t"]

_NHWC = [0, 2, 3, 1]  # device axis k holds NCHW dim _NHWC[k]
_POS = {d: k for k, d in enumerate(_NHWC)}  # NCHW dim -> device axis


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    rank = len(x.shape)
    name = rules.canonical_op(node.target)
    if name == "aten.permute":
        p = [int(d) % rank for d in node.args[1]]
    else:  # transpose(dim0, dim1); t() swaps the two dims of a 2-D tensor (a 1-D one is unchanged)
        d0, d1 = (int(node.args[1]) % rank, int(node.args[2]) % rank) if name == "aten.transpose" else (0, rank - 1)
        p = list(range(rank))
        p[d0], p[d1] = p[d1], p[d0]
    if rank == 4:
        perms = [_POS[p[_NHWC[k]]] for k in range(4)]
    else:
        perms = p
    ctx.graph.add_op(Op("TRANSPOSE", [x.name], [out.name], {"perms": perms}, src))
