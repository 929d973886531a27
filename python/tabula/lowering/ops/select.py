"""aten.select (integer indexing: ``qkv[0]``, ``y[:, -1]``, ``y[:, :, -1]``) -> SLICE of size 1 along the
dim (mapped to the NHWC axis of a 4-D input), then the RESHAPE that drops it (``reshape.reshape_to``:
a TRANSPOSE too where the NHWC element order differs from PyTorch's).  One grid (``rules.SHARED``)."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import node_source
from ...ir import Op
from ._common import device_axis
from .reshape import reshape_to

ATEN = ["aten.select"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    rank = len(x.shape)
    dim = int(node.args[1]) % rank
    ax = device_axis(dim, rank)
    n = x.shape[ax]
    index = int(node.args[2])
    if not -n <= index < n:
        raise LoweringError(f"{src}: select index {index} outside a dim of size {n}")
    starts = [0] * rank
    sizes = list(x.shape)
    starts[ax], sizes[ax] = index % n, 1
    picked = ctx.temp(f"{node.name}_slice", sizes, x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("SLICE", [x.name], [picked.name], {"start": starts, "size": sizes}, src))
    reshape_to(ctx, node, picked, out)
