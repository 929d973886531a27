"""aten.max_pool1d / avg_pool1d / adaptive_avg_pool1d -> MAX_POOL2D / AVG_POOL2D on the NHWC view ``[N, C, L, 1]`` of the
``[N, C, L]`` input (``_view1d.py``: RESHAPEs only, no data moves), kernel ``[1, K]`` along W.
Input and output share the producer's grid (``rules.SHARED``).  Padding: max pooling pads with the
type's minimum (PyTorch: -inf); average pooling as ``avg_pool2d.avg_pool_nhwc`` (PyTorch's default
``count_include_pad=True`` is a PAD with the zero point, then an unpadded AVG_POOL2D).
``adaptive_avg_pool1d(x, o)`` with ``o`` dividing L is the pool with kernel and stride ``L / o``."""
from __future__ import annotations

from ... import rules
from ...fx import arg, fake_value, node_source
from ...ir import Op
from . import _view1d
from .avg_pool2d import avg_pool_nhwc

ATEN = ["aten.max_pool1d", "aten.avg_pool1d", "aten.adaptive_avg_pool1d"]


def _one(v, default) -> int:
    if v is None or (not isinstance(v, int) and len(v) == 0):
        v = default
    return int(v) if isinstance(v, int) else int(list(v)[0])


def unsupported(node) -> str | None:
    """Why this captured 1-D pool cannot be lowered (listed before calibration), or None."""
    x = fake_value(node.args[0])
    if x is not None and x.dim() != 3:
        return f"on a {x.dim()}-D input (tabula needs the batched [N, C, L] layout; add the batch dimension)"
    if rules.canonical_op(node.target) == "aten.adaptive_avg_pool1d":
        o = _one(node.args[1], None)
        if x is not None and x.shape[-1] % o:
            return f"to {o} from {x.shape[-1]} (the output size must divide the input's)"
        return None
    if rules.canonical_op(node.target) == "aten.max_pool1d":
        if _one(arg(node, 4, "dilation", 1), 1) != 1:
            return "with dilation > 1 (TOSA pooling has none)"
        if arg(node, 5, "ceil_mode", False):
            return "with ceil_mode=True"
    elif arg(node, 4, "ceil_mode", False):
        return "with ceil_mode=True"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    if rules.canonical_op(node.target) == "aten.adaptive_avg_pool1d":
        x, out = ctx.input(node.args[0], node), ctx.output(node)
        k = x.shape[-1] // _one(node.args[1], None)
        if (x.scale, x.zero_point) != (out.scale, out.zero_point):  # its own grid (rules.own_average_grid)
            from .mean import sum_rescale

            sum_rescale(ctx, node, x, out, int(x.shape[0] * x.shape[1] * (x.shape[2] // k)), k)
            return
        s, p = k, 0
    else:
        x, out = ctx.shared(node)
        k = _one(node.args[1], None)
        s = _one(arg(node, 2, "stride", None), k)
        p = _one(arg(node, 3, "padding", 0), 0)
    x4 = _view1d.rows(ctx, node, x)
    y4 = ctx.temp(f"{node.name}_rows_out", (*out.shape, 1), out.dtype, out.scale, out.zero_point)
    if rules.canonical_op(node.target) == "aten.max_pool1d":
        ctx.graph.add_op(Op("MAX_POOL2D", [x4.name], [y4.name], {"kernel": [1, k], "stride": [1, s], "pad": [0, 0, p, p]}, src))
    else:
        include = rules.canonical_op(node.target) == "aten.avg_pool1d" and bool(arg(node, 5, "count_include_pad", True))
        avg_pool_nhwc(ctx, node, x4, y4, [1, k], [1, s], [0, 0, p, p], include)
    ctx.graph.add_op(Op("RESHAPE", [y4.name], [out.name], {"shape": list(out.shape)}, src))
