"""aten.linear -> FULLY_CONNECTED (accumulator int32 / int48) + per-channel RESCALE."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import node_source
from ._common import weighted

ATEN = ["aten.linear"]


def lower(ctx, node) -> None:
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if len(x.shape) != 2:
        raise LoweringError(f"{node_source(node)}: linear on a {len(x.shape)}-D input is not supported yet (flatten to [N, C] first)")
    w_q, w_scale = ctx.per_channel_const(node.args[1], node)
    weighted(ctx, node, x, out, w_q, w_scale, w_q, "FULLY_CONNECTED", {})
