"""aten.linear -> FULLY_CONNECTED (accumulator int32 / int48) + per-channel RESCALE.

A 3-D (or higher, not 4-D) input ``[B, T, C]`` is FULLY_CONNECTED over its rows: RESHAPE to
``[B*T, C]``, FULLY_CONNECTED + RESCALE, RESHAPE to ``[B, T, Cout]`` (PyTorch's linear acts on the
last dim).  A 4-D input is NHWC on the device, whose last axis is not PyTorch's: refused
(:func:`unsupported`: the quantizer lists it up front).
"""
from __future__ import annotations

import math

from torch.fx import Node

from ...errors import LoweringError
from ...fx import node_source
from ...ir import Op
from ._common import weighted

ATEN = ["aten.linear"]


def unsupported(node) -> str | None:
    """Why this captured linear cannot be lowered (listed before calibration), or None: its input must
    be 2-D ``[N, C]`` or 3-D ``[B, T, C]`` (a 4-D input is NHWC on the device)."""
    x = node.args[0]
    rank = len(x.meta["val"].shape) if isinstance(x, Node) and "val" in x.meta else 2
    if rank < 2 or rank == 4:  # 4-D is NHWC on the device: its last axis is not PyTorch's
        return f"on a {rank}-D input (give it [N, C] or [B, T, C])"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if len(x.shape) < 2 or len(x.shape) == 4:
        raise LoweringError(f"{src}: linear on a {len(x.shape)}-D input is not supported (give it [N, C] or [B, T, C]; "
                            "flatten or permute a 4-D tensor first)")
    w_q, w_scale = ctx.per_channel_const(node.args[1], node)
    if len(x.shape) == 2:
        weighted(ctx, node, x, out, w_q, w_scale, w_q, "FULLY_CONNECTED", {})
        return
    rows = math.prod(x.shape[:-1])
    x2 = ctx.temp(f"{node.name}_rows", (rows, x.shape[-1]), x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [x.name], [x2.name], {"shape": list(x2.shape)}, src))
    out2 = ctx.temp(f"{node.name}_rows_out", (rows, out.shape[-1]), out.dtype, out.scale, out.zero_point)
    weighted(ctx, node, x2, out2, w_q, w_scale, w_q, "FULLY_CONNECTED", {})
    ctx.graph.add_op(Op("RESHAPE", [out2.name], [out.name], {"shape": list(out.shape)}, src))
