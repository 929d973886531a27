"""aten.mean over any dims, and aten.sum (always on its own grid: the int32 sum and one RESCALE by
``s_in / s_out``).

Over H and W of a 4-D NCHW tensor: AVG_POOL2D on the NHWC tensor itself (kernel ``[H, W]``), on the
input's grid (``rules.SHARED``; TOSA's average: the int32 sum of ``x - zp``, ``reciprocal_scale``, one
rounding half up).  Over any other dims the output has its own grid (``rules.own_average_grid``): the
input's axes are ordered kept-then-reduced, and :func:`sum_rescale` takes the int32 sum of each output's
``R`` elements and one RESCALE by ``s_in / (R * s_out)``.  (On one grid -- a graph quantized that way --
the same view runs as AVG_POOL2D.)  The input's axes are ordered kept-then-reduced
(a TRANSPOSE, or a RESHAPE when no axis of size > 1 changes place), viewed as ``[1, K, R, 1]`` (K
outputs of R elements each), pooled with kernel ``[1, R]``, and the ``[1, K, 1, 1]`` result reshaped to
the output: the kept axes go in the output's device order (NHWC for a 4-D ``keepdim`` output, else
PyTorch's order).  ``dtype=`` other than float32 is refused up front.
"""
from __future__ import annotations

import numpy as np
import torch

from ...errors import LoweringError
from ...fx import arg, canonical_op, fake_value, node_source
from ...ir import Op
from . import _view1d
from ._common import device_axis

ATEN = ["aten.mean", "aten.sum"]


def _is_sum(node) -> bool:
    return canonical_op(node.target) == "aten.sum"


def _dims(node, rank: int) -> list[int]:
    if _is_sum(node) and node.target is torch.ops.aten.sum.default:  # sum(x, dtype=None): every dim
        return list(range(rank))
    dims = arg(node, 1, "dim", None)
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({int(d) % rank for d in dims})


def unsupported(node) -> str | None:
    """Why this captured mean / sum cannot be lowered (listed before calibration), or None."""
    dt = node.kwargs.get("dtype") if node.target is torch.ops.aten.sum.default else arg(node, 3, "dtype", None)
    if dt not in (None, torch.float32):
        return f"with dtype={dt} (leave dtype unset)"
    x = fake_value(node.args[0])
    if x is not None and x.dim() == 0:
        return "of a 0-D tensor"
    return None


def sum_rescale(ctx, node, x, out, k: int, r: int, divide: bool = True) -> None:
    """``out`` = the mean of each of the ``k`` rows of ``r`` consecutive elements of ``x`` (row-major), on
    ``out``'s own grid: RESHAPE to ``[k, r]``, RESCALE to int32 (minus the zero point), REDUCE_SUM, and one
    RESCALE by ``s_x / (r * s_out)`` (``rules.AVERAGING``: a single rounding, half up); ``divide`` False: the
    sum itself, ``s_x / s_out``."""
    src = node_source(node)
    rows = ctx.temp(f"{node.name}_rows", (k, r), x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [x.name], [rows.name], {"shape": [k, r]}, src))
    x32 = ctx.temp(f"{node.name}_x32", (k, r), "int32", x.scale)
    ctx.rescale(rows, x32, src, scale=1.0)
    total = ctx.temp(f"{node.name}_sum", (k, 1), "int32", x.scale)
    ctx.graph.add_op(Op("REDUCE_SUM", [x32.name], [total.name], {"axis": 1}, src))
    mean = ctx.temp(f"{node.name}_mean", (k, 1), out.dtype, out.scale, out.zero_point)
    ctx.rescale(total, mean, src, scale=float(x.scale) / ((r if divide else 1) * float(out.scale)))
    ctx.graph.add_op(Op("RESHAPE", [mean.name], [out.name], {"shape": list(out.shape)}, src))


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.input(node.args[0], node), ctx.output(node)
    rank = len(x.shape)
    dims = _dims(node, rank)
    zp = int(x.zero_point)
    is_sum = _is_sum(node)
    if rank == 4 and dims == [2, 3] and not is_sum:  # pooled in place on NHWC (one grid: rules.own_average_grid)
        if (x.scale, x.zero_point) != (out.scale, out.zero_point):
            raise LoweringError(f"{src}: mean over H, W shares its input's grid; quantize with tabula.quantize")
        n, h, w, c = x.shape
        y = out if len(out.shape) == 4 else ctx.temp(f"{node.name}_keepdim", (n, 1, 1, c), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("AVG_POOL2D", [x.name], [y.name], {"kernel": [h, w], "stride": [h, w], "pad": [0, 0, 0, 0],
                                                               "input_zp": zp, "output_zp": zp}, src))
        if y is not out:
            ctx.graph.add_op(Op("RESHAPE", [y.name], [out.name], {"shape": list(out.shape)}, src))
        return
    kept = [d for d in range(rank) if d not in dims]
    dev = {d: device_axis(d, rank) for d in range(rank)}
    if len(out.shape) == 4:  # keepdim on a 4-D input: the output is NHWC too
        kept.sort(key=lambda d: dev[d])
    perm = [dev[d] for d in kept] + sorted(dev[d] for d in dims)
    k = int(np.prod([x.shape[p] for p in perm[:len(kept)]], dtype=np.int64))
    r = int(np.prod([x.shape[p] for p in perm[len(kept):]], dtype=np.int64))
    if k * r != int(np.prod(x.shape, dtype=np.int64)):
        raise LoweringError(f"{src}: mean over {dims} of {x.shape}: internal shape error")
    cur = x if perm == list(range(rank)) else _view1d._move(ctx, node, x, perm, "kept_first")
    if is_sum or (float(x.scale), int(x.zero_point)) != (float(out.scale), int(out.zero_point)):
        sum_rescale(ctx, node, cur, out, k, r, divide=not is_sum)
        return
    rows = _view1d._reshape(ctx, node, cur, (1, k, r, 1), "rows")
    pooled = ctx.temp(f"{node.name}_pooled", (1, k, 1, 1), x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("AVG_POOL2D", [rows.name], [pooled.name], {"kernel": [1, r], "stride": [1, r], "pad": [0, 0, 0, 0],
                                                                  "input_zp": zp, "output_zp": zp}, src))
    ctx.graph.add_op(Op("RESHAPE", [pooled.name], [out.name], {"shape": list(out.shape)}, src))
