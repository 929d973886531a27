"""avg_pool2d / adaptive_avg_pool2d / mean over H, W -> AVG_POOL2D (shared qparams, TOSA rounding).

TOSA divides by the number of valid (non-padded) taps, i.e. PyTorch's ``count_include_pad=False``;
a padded pool with PyTorch's default ``count_include_pad=True`` is rejected rather than computed
differently.  ``mean(keepdim=False)`` adds a RESHAPE to ``[N, C]``.
"""
from __future__ import annotations

from ... import rules
from ...errors import LoweringError
from ...fx import arg, fake_value, node_source
from ...ir import Op
from ._common import pair

ATEN = ["aten.avg_pool2d", "aten.adaptive_avg_pool2d", "aten.mean"]


def lower(ctx, node) -> None:
    src = node_source(node)
    name = rules.canonical_op(node.target)
    x, out = ctx.shared(node)
    if len(x.shape) != 4:
        raise LoweringError(f"{src}: {name} needs a 4-D NCHW input")
    n, h, w, c = x.shape
    reshape_to = None
    if name == "aten.avg_pool2d":
        kernel = pair(node.args[1], None)
        stride = pair(arg(node, 2, "stride", None) or kernel, kernel)
        ph, pw = pair(arg(node, 3, "padding", 0), 0)
        if arg(node, 4, "ceil_mode", False) or arg(node, 6, "divisor_override", None) is not None:
            raise LoweringError(f"{src}: avg_pool2d with ceil_mode or divisor_override is not supported")
        if (ph or pw) and arg(node, 5, "count_include_pad", True):
            raise LoweringError(f"{src}: padded avg_pool2d needs count_include_pad=False (TOSA excludes padding)")
    elif name == "aten.adaptive_avg_pool2d":
        oh, ow = pair(node.args[1], None)
        if h % oh or w % ow:
            raise LoweringError(f"{src}: adaptive_avg_pool2d to {oh}x{ow} needs sizes that divide {h}x{w}")
        kernel, stride, ph, pw = [h // oh, w // ow], [h // oh, w // ow], 0, 0
    else:
        dims = sorted(d % 4 for d in (arg(node, 1, "dim", None) or []))
        if dims != [2, 3]:
            raise LoweringError(f"{src}: mean is supported over dims (2, 3) (H, W) of an NCHW tensor, got {dims}")
        kernel, stride, ph, pw = [h, w], [h, w], 0, 0
        if not arg(node, 2, "keepdim", False):
            reshape_to = out
            out = ctx.temp(f"{node.name}_keepdim", (n, 1, 1, c), x.dtype, x.scale, x.zero_point)
    attrs = {"kernel": kernel, "stride": stride, "pad": [ph, ph, pw, pw], "input_zp": int(x.zero_point), "output_zp": int(x.zero_point)}
    ctx.graph.add_op(Op("AVG_POOL2D", [x.name], [out.name], attrs, src))
    if reshape_to is not None:
        ctx.graph.add_op(Op("RESHAPE", [out.name], [reshape_to.name], {"shape": list(reshape_to.shape)}, src))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration (PyTorch NCHW)."""
    name = rules.canonical_op(node.target)
    x = fake_value(node.args[0])
    if x is None or x.dim() != 4:
        return f"on a {getattr(x, 'ndim', '?')}-D input (needs a 4-D NCHW tensor)"
    h, w = int(x.shape[2]), int(x.shape[3])
    if name == "aten.avg_pool2d":
        if arg(node, 4, "ceil_mode", False) or arg(node, 6, "divisor_override", None) is not None:
            return "with ceil_mode or divisor_override"
        ph, pw = pair(arg(node, 3, "padding", 0), 0)
        if (ph or pw) and arg(node, 5, "count_include_pad", True):
            return "with padding and count_include_pad=True (TOSA excludes padding: pass count_include_pad=False)"
    elif name == "aten.adaptive_avg_pool2d":
        oh, ow = pair(node.args[1], None)
        if h % oh or w % ow:
            return f"to {oh}x{ow}, which does not divide {h}x{w}"
    else:
        dims = sorted(d % 4 for d in (arg(node, 1, "dim", None) or []))
        if dims != [2, 3]:
            return f"over dims {tuple(arg(node, 1, 'dim', None) or ())} (only (2, 3): H and W of an NCHW tensor)"
    return None
