"""aten.pad (constant mode) -> PAD with the pad value quantized on the shared grid (real 0 is the
zero point), the PyTorch pad list (last dim first) mapped to the NHWC device axes."""
from __future__ import annotations

import numpy as np

from ...errors import LoweringError
from ...fx import arg, node_source
from ...ir import Op
from ...qmath import quantize_round_half_even
from ._common import device_axis

ATEN = ["aten.pad"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    if arg(node, 2, "mode", "constant") != "constant":
        raise LoweringError(f"{src}: only constant padding is supported")
    pads = list(node.args[1])
    value = arg(node, 3, "value", None)
    value = 0.0 if value is None else float(value)
    rank = len(x.shape)
    before, after = [0] * rank, [0] * rank
    for k in range(len(pads) // 2):
        ax = device_axis(rank - 1 - k, rank)
        before[ax], after[ax] = int(pads[2 * k]), int(pads[2 * k + 1])
    if min(before + after) < 0:
        raise LoweringError(f"{src}: negative padding (cropping) is not supported; use slicing")
    code = int(quantize_round_half_even(np.array([value], np.float32), x.scale, x.zero_point, x.dtype)[0])
    ctx.graph.add_op(Op("PAD", [x.name], [out.name], {"pad_before": before, "pad_after": after, "pad_value": code}, src))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration."""
    mode = arg(node, 2, "mode", "constant")
    if mode != "constant":
        return f"with mode={mode!r} (only constant padding)"
    if min(int(p) for p in node.args[1]) < 0:
        return "with negative padding (cropping; use slicing)"
    return None
