"""aten.expand -> TILE (each size-1 axis repeated to its new size), after a RESHAPE that adds the new
leading dims where the rank grows; aten.repeat(x, reps) likewise: TOSA TILE with ``multiples = reps`` (its
semantics exactly: PyTorch's repeat is numpy's tile, a longer ``reps`` adding leading dims).  One grid (``rules.SHARED``): TILE copies codes."""
from __future__ import annotations

from ...fx import fake_value, node_source
from ...ir import Op
from .reshape import reshape_to

ATEN = ["aten.expand", "aten.repeat"]

_NHWC = [0, 2, 3, 1]  # device axis k holds NCHW dim _NHWC[k]


def _device_shape(shape) -> tuple[int, ...]:
    return tuple(shape[d] for d in _NHWC) if len(shape) == 4 else tuple(shape)


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    logical_out = tuple(int(d) for d in node.meta["val"].shape)
    xv = fake_value(node.args[0])
    logical_in = tuple(int(d) for d in xv.shape) if xv is not None else tuple(x.shape)
    rank = len(logical_out)
    padded = (1,) * (rank - len(logical_in)) + logical_in
    cur = x
    if len(padded) != len(logical_in):
        cur = ctx.temp(f"{node.name}_ranked", _device_shape(padded), x.dtype, x.scale, x.zero_point)
        reshape_to(ctx, node, x, cur)
    mult = [o // i for o, i in zip(logical_out, padded)]
    if all(m == 1 for m in mult):
        ctx.graph.add_op(Op("RESHAPE", [cur.name], [out.name], {"shape": list(out.shape)}, src))
        return
    ctx.graph.add_op(Op("TILE", [cur.name], [out.name], {"multiples": list(_device_shape(mult))}, src))
