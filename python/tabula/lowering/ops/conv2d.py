"""aten.conv2d -> CONV2D (OHWI weights), DEPTHWISE_CONV2D (``groups == Cin``) or per-group CONV2D +
CONCAT (``1 < groups < Cin``), each into an int32 / int48 accumulator + per-channel RESCALE.
Padding: integers, ``"valid"`` or ``"same"`` (PyTorch's split: the odd one at the bottom / right);
dilation and stride as given.  See ``_conv.py``."""
from __future__ import annotations

from ...fx import arg, node_source
from . import _conv
from ._common import pair

ATEN = ["aten.conv2d"]


def unsupported(node) -> str | None:
    """Why this captured conv2d cannot be lowered (listed before calibration), or None."""
    return _conv.unsupported(node, 4, "NCHW")


def lower(ctx, node) -> None:
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    w_q, w_scale = ctx.per_channel_const(node.args[1], node)
    stride, dilation = pair(arg(node, 3, "stride", 1), 1), pair(arg(node, 5, "dilation", 1), 1)
    (pt, pb), (pl, pr) = _conv.padding_pairs(arg(node, 4, "padding", 0), list(w_q.shape[2:]), dilation, node_source(node))
    _conv.conv_nhwc(ctx, node, x, out, w_q, w_scale, stride, dilation, [pt, pb, pl, pr], int(arg(node, 6, "groups", 1)))
