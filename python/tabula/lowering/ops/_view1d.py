"""How 1-D ops run on the 2-D window kernels.

The IR keeps a 3-D activation ``[N, C, L]`` in PyTorch's layout (only 4-D tensors are NHWC), so a
1-D op works on a 4-D NHWC view of it:

* convolutions need channels last: ``[N, C, L]`` -TRANSPOSE-> ``[N, L, C]`` -RESHAPE-> ``[N, 1, L, C]``
  (H = 1), the conv with kernel ``[1, K]``, then back: ``[N, 1, OL, C']`` -RESHAPE-> ``[N, OL, C']``
  -TRANSPOSE-> ``[N, C', OL]``.  A TRANSPOSE whose moved axes include a size-1 one keeps the element
  order and is a RESHAPE instead (no copy: the arena aliases it).
* pooling treats channels alike, so no data moves: ``[N, C, L]`` is the NHWC tensor
  ``[N, H=C, W=L, 1]`` byte for byte and the pool runs with kernel ``[1, K]`` along W.
"""
from __future__ import annotations

from ...fx import node_source
from ...ir import Op


def _move(ctx, node, x, perms: list[int], base: str, out=None):
    """``x`` permuted by ``perms`` into ``out`` or a new tensor on the same grid: TRANSPOSE, or
    RESHAPE when the axes of size > 1 keep their order."""
    shape = tuple(x.shape[p] for p in perms)
    y = out if out is not None else ctx.temp(f"{node.name}_{base}", shape, x.dtype, x.scale, x.zero_point)
    moved = [p for p in perms if x.shape[p] != 1]
    if moved == sorted(moved):
        ctx.graph.add_op(Op("RESHAPE", [x.name], [y.name], {"shape": list(shape)}, node_source(node)))
    else:
        ctx.graph.add_op(Op("TRANSPOSE", [x.name], [y.name], {"perms": list(perms)}, node_source(node)))
    return y


def _reshape(ctx, node, x, shape, base: str, out=None):
    y = out if out is not None else ctx.temp(f"{node.name}_{base}", shape, x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [x.name], [y.name], {"shape": list(y.shape)}, node_source(node)))
    return y


def channels_last(ctx, node, x):
    """``x`` [N, C, L] -> a new NHWC tensor [N, 1, L, C] (same grid)."""
    n, c, length = x.shape
    nlc = _move(ctx, node, x, [0, 2, 1], "nlc")
    return _reshape(ctx, node, nlc, (n, 1, length, c), "nhwc")


def channels_first(ctx, node, y4, out) -> None:
    """NHWC ``y4`` [N, 1, L, C] -> ``out`` [N, C, L] (an existing tensor on ``y4``'s grid)."""
    n, _, length, c = y4.shape
    nlc = _reshape(ctx, node, y4, (n, length, c), "nlc_out")
    _move(ctx, node, nlc, [0, 2, 1], "ncl", out=out)


def rows(ctx, node, x):
    """``x`` [N, C, L] -> the NHWC view [N, C, L, 1] (a RESHAPE: the same bytes)."""
    return _reshape(ctx, node, x, (*x.shape, 1), "rows")
