"""aten.conv2d -> CONV2D (int32 accumulator, OHWI weights) + per-channel RESCALE to int8."""
from __future__ import annotations

import numpy as np

from ...quantize.quantizer import node_source
from ..ir import LoweringError, Op
from ._common import arg, emit_rescale, pair

ATEN = ["aten.conv2d"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    w_q, w_scale = ctx.per_channel_const(node.args[1], node)
    if int(arg(node, 6, "groups", 1)) != 1:
        raise LoweringError(f"{src}: grouped/depthwise conv2d (groups != 1) is not supported yet")
    padding = arg(node, 4, "padding", 0)
    if isinstance(padding, str):
        raise LoweringError(f"{src}: conv2d padding={padding!r} is not supported; give explicit integers")
    ph, pw = pair(padding, 0)
    stride, dilation = pair(arg(node, 3, "stride", 1), 1), pair(arg(node, 5, "dilation", 1), 1)
    cout = w_q.shape[0]
    acc_scale = float(x.scale) * w_scale  # [Cout], float64
    w = ctx.const(f"{node.name}_weight", np.transpose(w_q, (0, 2, 3, 1)), "int8", w_scale.tolist())
    b_node = arg(node, 2, "bias", None)
    if b_node is not None:
        b_q, _ = ctx.per_channel_const(b_node, node)
        bias = b_q.astype(np.int32)
    else:
        bias = np.zeros(cout, np.int32)
    b = ctx.const(f"{node.name}_bias", bias, "int32", acc_scale.tolist())
    acc = ctx.temp(f"{node.name}_acc", out.shape, "int32", acc_scale.tolist())
    ctx.graph.add_op(
        Op(
            "CONV2D",
            [x.name, w.name, b.name],
            [acc.name],
            {"pad": [ph, ph, pw, pw], "stride": stride, "dilation": dilation, "input_zp": int(x.zero_point), "weight_zp": 0},
            src,
        )
    )
    emit_rescale(ctx, acc, acc_scale, out, src)
