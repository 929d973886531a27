"""relu / relu6 / hardtanh / clamp -> CLAMP on integer codes (input and output share qparams).

``q(clamp(dq(c), lo, hi)) == clamp(c, q(lo), q(hi))`` for every code c because q(dq(c)) == c and q is
monotone, so the integer op is exact; bounds are quantized with PyTorch's rounding (half to even).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ... import dtypes, rules
from ...errors import LoweringError
from ...fx import arg, node_source
from ...ir import Op
from ...qmath import quantize_round_half_even

ATEN = ["aten.relu", "aten.relu6", "aten.hardtanh", "aten.clamp"]


def _bounds(node, name):
    if name == "aten.relu":
        return 0.0, math.inf
    if name == "aten.relu6":
        return 0.0, 6.0
    if name == "aten.hardtanh":
        return float(arg(node, 1, "min_val", -1.0)), float(arg(node, 2, "max_val", 1.0))
    lo, hi = arg(node, 1, "min", None), arg(node, 2, "max", None)
    if any(isinstance(v, torch.fx.Node) for v in (lo, hi)):
        raise LoweringError(f"{node_source(node)}: clamp with tensor bounds is not supported")
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    name = rules.canonical_op(node.target)
    lo, hi = _bounds(node, name)
    qlo, qhi = dtypes.range_of(x.dtype)

    def code(v, default):
        if math.isinf(v):
            return default
        return int(quantize_round_half_even(np.array([v], np.float32), x.scale, x.zero_point, x.dtype)[0])

    cmin, cmax = code(lo, qlo), code(hi, qhi)
    if cmin > cmax:
        raise LoweringError(f"{src}: clamp bounds {lo}..{hi} are empty on this grid")
    ctx.graph.add_op(Op("CLAMP", [x.name], [out.name], {"min": cmin, "max": cmax}, src))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration."""
    if rules.canonical_op(node.target) == "aten.clamp" and any(
            isinstance(v, torch.fx.Node) for v in (arg(node, 1, "min", None), arg(node, 2, "max", None))):
        return "with tensor bounds (only numbers)"
    return None
