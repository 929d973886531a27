"""amax / amin over dims -> one REDUCE_MAX / REDUCE_MIN per dim on the codes themselves (int8 / int16, the
input's grid: ``rules.SHARED``; exact, the codes order as the values do), then the output's view: a RESHAPE
(or TRANSPOSE) when ``keepdim`` is False (:func:`tabula.lowering.ops._view1d._move`, the kept axes in
PyTorch's order)."""
from __future__ import annotations

from ...fx import arg, canonical_op, node_source
from ...ir import Op
from . import _view1d
from ._common import device_axis

ATEN = ["aten.amax", "aten.amin"]


def lower(ctx, node) -> None:
    x, out = ctx.shared(node)
    dims = arg(node, 1, "dim", [])
    dims = [dims] if isinstance(dims, int) else list(dims)
    op = "REDUCE_MAX" if canonical_op(node.target) == "aten.amax" else "REDUCE_MIN"
    reduce_dims(ctx, node, x, out, op, dims or range(len(x.shape)))


def reduce_dims(ctx, node, x, out, op: str, dims) -> None:
    """``op`` (REDUCE_MAX / REDUCE_MIN) of IR tensor ``x`` over PyTorch dims ``dims`` (negative allowed), one
    op per dim in increasing order, into ``out`` (an existing tensor of ``x``'s dtype and grid: the reduced
    dims kept as 1, or dropped -- then the kept axes are moved first in PyTorch's order and RESHAPEd)."""
    src = node_source(node)
    rank = len(x.shape)
    dims = sorted({int(d) % rank for d in dims})
    shape = list(x.shape)
    cur = x
    for d in dims:
        ax = device_axis(d, rank)
        shape[ax] = 1
        nxt = ctx.temp(f"{node.name}_r{ax}", tuple(shape), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op(op, [cur.name], [nxt.name], {"axis": ax}, src))
        cur = nxt
    kept = [device_axis(d, rank) for d in range(rank) if d not in dims]
    if len(out.shape) == rank:  # keepdim: the reduced tensor is the output's layout
        ctx.graph.add_op(Op("RESHAPE", [cur.name], [out.name], {"shape": list(out.shape)}, src))
        return
    reduced = [device_axis(d, rank) for d in dims]
    moved = _view1d._move(ctx, node, cur, kept + reduced, "kept_first")
    ctx.graph.add_op(Op("RESHAPE", [moved.name], [out.name], {"shape": list(out.shape)}, src))
