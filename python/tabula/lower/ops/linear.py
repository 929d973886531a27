"""aten.linear -> FULLY_CONNECTED (int32 accumulator) + per-channel RESCALE to int8."""
from __future__ import annotations

import numpy as np

from ...quantize.quantizer import node_source
from ..ir import LoweringError, Op
from ._common import arg, emit_rescale

ATEN = ["aten.linear"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if len(x.shape) != 2:
        raise LoweringError(f"{src}: linear on a {len(x.shape)}-D input is not supported yet (flatten to [N, C] first)")
    w_q, w_scale = ctx.per_channel_const(node.args[1], node)
    acc_scale = float(x.scale) * w_scale
    w = ctx.const(f"{node.name}_weight", w_q, "int8", w_scale.tolist())
    b_node = arg(node, 2, "bias", None)
    bias = ctx.per_channel_const(b_node, node)[0].astype(np.int32) if b_node is not None else np.zeros(w_q.shape[0], np.int32)
    b = ctx.const(f"{node.name}_bias", bias, "int32", acc_scale.tolist())
    acc = ctx.temp(f"{node.name}_acc", out.shape, "int32", acc_scale.tolist())
    ctx.graph.add_op(Op("FULLY_CONNECTED", [x.name, w.name, b.name], [acc.name], {"input_zp": int(x.zero_point), "weight_zp": 0}, src))
    emit_rescale(ctx, acc, acc_scale, out, src)
