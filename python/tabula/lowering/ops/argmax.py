"""argmax / argmin(x, dim, keepdim) -> ARGMAX on the codes (int8 / int16 on the producer's grid: ``rules.INDEX``; the
codes order as the values do, and ties give the first index, as PyTorch).  The output is int32 indices,
never quantized (scale 1: a graph output reads as the index).  ``dim=None`` takes the flattened tensor
(a RESHAPE first); a 4-D input reduces over its channels (dim 1), where the NHWC result is PyTorch's
(N, H, W) -- other dims of a 4-D input are refused up front.

argmin is ARGMAX of the codes' bitwise not, ``BITWISE_XOR(x, -1) = -1 - x``: it reverses the order of
every int8 / int16 code without leaving the dtype (-128 -> 127), so the first maximum of ``~x`` is the
first minimum of ``x`` -- PyTorch's argmin, ties included, exactly (TOSA 1.0 has no ARGMIN)."""
from __future__ import annotations

import numpy as np

from ...fx import arg, canonical_op, fake_value, node_source
from ...ir import Op
from ._common import device_axis

ATEN = ["aten.argmax", "aten.argmin"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.raw_output(node, "int32")
    dim = arg(node, 1, "dim", None)
    rank = len(x.shape)
    if dim is None:
        flat = ctx.temp(f"{node.name}_flat", (x.numel,), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("RESHAPE", [x.name], [flat.name], {"shape": list(flat.shape)}, src))
        x, axis = flat, 0
    else:
        axis = device_axis(int(dim), rank)
    if canonical_op(node.target) == "aten.argmin":
        inv = ctx.temp(f"{node.name}_not", x.shape, x.dtype, None)
        ones = ctx.const(f"{node.name}_all_ones", np.full((1,) * len(x.shape), -1, np.int64), x.dtype)
        ctx.graph.add_op(Op("BITWISE_XOR", [x.name, ones.name], [inv.name], {}, src))
        x = inv
    dropped = tuple(d for i, d in enumerate(x.shape) if i != axis) or (1,)
    if dropped == tuple(out.shape):
        ctx.graph.add_op(Op("ARGMAX", [x.name], [out.name], {"axis": axis}, src))
        return
    idx = ctx.temp(f"{node.name}_idx", dropped, "int32", 1.0)
    ctx.graph.add_op(Op("ARGMAX", [x.name], [idx.name], {"axis": axis}, src))
    ctx.graph.add_op(Op("RESHAPE", [idx.name], [out.name], {"shape": list(out.shape)}, src))


def unsupported(node) -> str | None:
    """Why this argmax / argmin cannot be lowered (listed before calibration), or None."""
    v = fake_value(node.args[0])
    dim = arg(node, 1, "dim", None)
    if v is not None and v.dim() == 4:
        if dim is None and not (v.shape[1] == 1 or v.shape[2] * v.shape[3] == 1):
            return "over a flattened 4-D tensor (give dim; the device holds it NHWC)"
        if dim is not None and int(dim) % 4 != 1:
            return f"over dim {dim} of a 4-D tensor (dim 1, the channels, only)"
    return None
