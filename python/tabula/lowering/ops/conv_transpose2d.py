"""aten.conv_transpose2d (groups 1, dilation 1) -> TRANSPOSE_CONV2D (TOSA 1.0) into an int32 / int48
accumulator + per-channel RESCALE, like a conv (``_common.weighted``: the bias quantized per call).

PyTorch's weight ``[Cin, Cout, KH, KW]`` (quantized per output channel, axis 1: ``rules.WEIGHT_AXIS``)
becomes TOSA's OHWI ``[Cout, KH, KW, Cin]``; ``padding`` p and ``output_padding`` op become TOSA's
``out_pad = [-p_h, -p_h + op_h, -p_w, -p_w + op_w]`` (PyTorch: ``OH = (IH-1)*s - 2p + KH + op``).
"""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import arg, fake_value, node_source
from ._common import pair, weighted

ATEN = ["aten.conv_transpose2d"]


def unsupported(node) -> str | None:
    """Why this captured conv_transpose2d cannot be lowered (listed before calibration), or None."""
    x = fake_value(node.args[0])
    if x is not None and x.dim() != 4:
        return f"on a {x.dim()}-D input (tabula needs the batched NCHW layout; add the batch dimension)"
    if getattr(node.args[1], "op", None) != "get_attr":
        return "whose weight is not a constant parameter"
    return _attrs_problem(node)


def _attrs_problem(node) -> str | None:
    if int(arg(node, 6, "groups", 1)) != 1:
        return "with groups > 1 (TOSA TRANSPOSE_CONV2D has none)"
    if pair(arg(node, 7, "dilation", 1), 1) != [1, 1]:
        return "with dilation > 1 (TOSA TRANSPOSE_CONV2D has none)"
    wv = fake_value(node.args[1])
    if wv is None:
        return None
    kh, kw = (int(d) for d in wv.shape[2:])
    (ph, pw), (oph, opw) = pair(arg(node, 4, "padding", 0), 0), pair(arg(node, 5, "output_padding", 0), 0)
    if ph >= kh or pw >= kw or -ph + oph <= -kh or -pw + opw <= -kw:
        return f"with padding {[ph, pw]} not below the kernel {[kh, kw]} (TOSA out_pad > -kernel)"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    why = _attrs_problem(node)
    if why:
        raise LoweringError(f"{src}: conv_transpose2d {why}")
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    w_q, w_scale = ctx.per_channel_const(node.args[1], node, axis=1)  # [Cin, Cout, KH, KW], scales [Cout]
    kh, kw = w_q.shape[2:]
    (ph, pw), (oph, opw) = pair(arg(node, 4, "padding", 0), 0), pair(arg(node, 5, "output_padding", 0), 0)
    if ph >= kh or pw >= kw or -ph + oph <= -kh or -pw + opw <= -kw:
        raise LoweringError(f"{src}: conv_transpose2d with padding {[ph, pw]} not below the kernel {[kh, kw]}")
    w_ohwi = w_q.transpose(1, 2, 3, 0)
    (sy, sx), (ph, pw) = pair(arg(node, 3, "stride", 1), 1), pair(arg(node, 4, "padding", 0), 0)
    oph, opw = pair(arg(node, 5, "output_padding", 0), 0)
    attrs = {"out_pad": [-ph, -ph + oph, -pw, -pw + opw], "stride": [sy, sx]}
    weighted(ctx, node, x, out, w_ohwi, w_scale, w_ohwi, "TRANSPOSE_CONV2D", attrs)
