"""avg_pool2d / adaptive_avg_pool2d -> AVG_POOL2D (shared qparams, TOSA rounding); ``mean``: ``mean.py``.

TOSA divides by the number of valid (non-padded) taps, i.e. PyTorch's ``count_include_pad=False``.
A padded pool with PyTorch's default ``count_include_pad=True`` divides by the whole window: it is
lowered as a PAD with the zero point (real 0: exact on the shared grid) and an unpadded AVG_POOL2D,
which is exactly that (:func:`avg_pool_nhwc`).
"""
from __future__ import annotations

from ... import rules
from ...errors import LoweringError
from ...fx import arg, fake_value, node_source
from ...ir import Op
from ._common import pair

ATEN = ["aten.avg_pool2d", "aten.adaptive_avg_pool2d"]


def unsupported(node) -> str | None:
    """Why this captured node cannot be lowered (listed before calibration), or None."""
    name = rules.canonical_op(node.target)
    x = fake_value(node.args[0])
    if x is not None and x.dim() != 4:
        return f"on a {x.dim()}-D input (tabula pools 4-D NCHW tensors here)"
    if name == "aten.avg_pool2d":
        if arg(node, 4, "ceil_mode", False):
            return "with ceil_mode=True"
        if arg(node, 6, "divisor_override", None) is not None:
            return "with divisor_override"
    elif name == "aten.adaptive_avg_pool2d" and x is not None:
        oh, ow = pair(node.args[1], None)
        if oh is None or ow is None or x.shape[2] % oh or x.shape[3] % ow:
            return f"to {node.args[1]} from {tuple(x.shape[2:])} (output sizes must divide the input's)"
    return None


def avg_pool_nhwc(ctx, node, x, out, kernel, stride, pad, count_include_pad: bool) -> None:
    """AVG_POOL2D of NHWC ``x`` into ``out`` (one grid), ``pad`` [top, bottom, left, right].  With
    padding and ``count_include_pad`` (PyTorch divides by the whole window): PAD ``x`` with its zero
    point (real 0), then pool without padding."""
    src = node_source(node)
    if any(pad) and count_include_pad:
        pt, pb, pl, pr = pad
        n, h, w, c = x.shape
        xp = ctx.temp(f"{node.name}_padded", (n, h + pt + pb, w + pl + pr, c), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("PAD", [x.name], [xp.name], {"pad_before": [0, pt, pl, 0], "pad_after": [0, pb, pr, 0],
                                                          "pad_value": int(x.zero_point)}, src))
        x, pad = xp, [0, 0, 0, 0]
    attrs = {"kernel": list(kernel), "stride": list(stride), "pad": list(pad), "input_zp": int(x.zero_point),
             "output_zp": int(out.zero_point)}
    ctx.graph.add_op(Op("AVG_POOL2D", [x.name], [out.name], attrs, src))


def lower(ctx, node) -> None:
    src = node_source(node)
    name = rules.canonical_op(node.target)
    x, out = ctx.shared(node)
    if len(x.shape) != 4:
        raise LoweringError(f"{src}: {name} needs a 4-D NCHW input")
    n, h, w, c = x.shape
    if name == "aten.avg_pool2d":
        kernel = pair(node.args[1], None)
        stride = pair(arg(node, 2, "stride", None) or kernel, kernel)
        ph, pw = pair(arg(node, 3, "padding", 0), 0)
        if arg(node, 4, "ceil_mode", False) or arg(node, 6, "divisor_override", None) is not None:
            raise LoweringError(f"{src}: avg_pool2d with ceil_mode or divisor_override is not supported")
        avg_pool_nhwc(ctx, node, x, out, kernel, stride, [ph, ph, pw, pw], bool(arg(node, 5, "count_include_pad", True)))
        return
    if name == "aten.adaptive_avg_pool2d":
        oh, ow = pair(node.args[1], None)
        if h % oh or w % ow:
            raise LoweringError(f"{src}: adaptive_avg_pool2d to {oh}x{ow} needs sizes that divide {h}x{w}")
        kernel, stride, ph, pw = [h // oh, w // ow], [h // oh, w // ow], 0, 0
    attrs = {"kernel": kernel, "stride": stride, "pad": [ph, ph, pw, pw], "input_zp": int(x.zero_point), "output_zp": int(x.zero_point)}
    ctx.graph.add_op(Op("AVG_POOL2D", [x.name], [out.name], attrs, src))
