"""aten.conv1d -> the 2-D conv lowering on the NHWC view ``[N, 1, L, C]`` of the ``[N, C, L]``
input (``_view1d.py``): kernel ``[1, K]``, stride / dilation / padding on W; groups, depthwise and
``padding="same"`` as for conv2d (``_conv.py``)."""
from __future__ import annotations

from ...fx import arg, node_source
from . import _conv, _view1d

ATEN = ["aten.conv1d"]


def _one(v, default) -> int:
    v = default if v is None else v
    return int(v) if isinstance(v, int) else int(list(v)[0])


def unsupported(node) -> str | None:
    """Why this captured conv1d cannot be lowered (listed before calibration), or None."""
    return _conv.unsupported(node, 3, "[N, C, L]")


def lower(ctx, node) -> None:
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    w_q, w_scale = ctx.per_channel_const(node.args[1], node)  # [Cout, Cin/G, K]
    stride, dilation = _one(arg(node, 3, "stride", 1), 1), _one(arg(node, 5, "dilation", 1), 1)
    ((pl, pr),) = _conv.padding_pairs(arg(node, 4, "padding", 0), [w_q.shape[2]], [dilation], node_source(node))
    x4 = _view1d.channels_last(ctx, node, x)
    n, cout, length = out.shape
    # named as the report's conv view of ``out`` (tabula.report.layers), which it is
    y4 = ctx.temp(f"{out.name}_nhwc_view", (n, 1, length, cout), out.dtype, out.scale, out.zero_point)
    _conv.conv_nhwc(ctx, node, x4, y4, w_q[:, :, None, :], w_scale, [1, stride], [1, dilation], [0, 0, pl, pr],
                    int(arg(node, 6, "groups", 1)))
    _view1d.channels_first(ctx, node, y4, out)
