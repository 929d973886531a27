"""aten.conv2d -> CONV2D (accumulator int32 / int48, OHWI weights) + per-channel RESCALE."""
from __future__ import annotations

import numpy as np

from ...errors import LoweringError
from ...fx import arg, node_source
from ._common import pair, weighted

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
    attrs = {"pad": [ph, ph, pw, pw], "stride": pair(arg(node, 3, "stride", 1), 1), "dilation": pair(arg(node, 5, "dilation", 1), 1)}
    weighted(ctx, node, x, out, w_q, w_scale, np.transpose(w_q, (0, 2, 3, 1)), "CONV2D", attrs)
