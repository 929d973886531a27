"""relu / relu6 / hardtanh / clamp -> CLAMP on integer codes (input and output share qparams).

``q(clamp(dq(c), lo, hi)) == clamp(c, q(lo), q(hi))`` for every code c because q(dq(c)) == c and q is
monotone, so the integer op is exact; bounds are quantized with PyTorch's rounding (half to even).

Fused into a producer (:func:`tabula.rules.fused_activation`; the converted graph has no quantize
between them): the producer's final RESCALE writes the activation's grid, ``q(max(v, 0)) ==
max(q(v), q(0))`` for the same reason, so a CLAMP to the bounds' codes after it is exact -- and when
those codes are the dtype's ends (an int8 ReLU grid has zero point -128) the RESCALE's own
saturation is the activation and no CLAMP is emitted.
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


def clamp_codes(node, t) -> tuple[int, int]:
    """The integer codes ``(min, max)`` of activation ``node``'s bounds on the grid of tensor ``t``
    (PyTorch's rounding, half to even; an infinite bound is the dtype's end).  Raises
    LoweringError for tensor bounds or bounds that are empty on the grid."""
    name = rules.canonical_op(node.target)
    lo, hi = _bounds(node, name)
    qlo, qhi = dtypes.range_of(t.dtype)

    def code(v, default):
        if math.isinf(v):
            return default
        return int(quantize_round_half_even(np.array([v], np.float32), t.scale, t.zero_point, t.dtype)[0])

    cmin, cmax = code(lo, qlo), code(hi, qhi)
    if cmin > cmax:
        raise LoweringError(f"{node_source(node)}: clamp bounds {lo}..{hi} are empty on this grid")
    return cmin, cmax


def lower(ctx, node) -> None:
    src = node_source(node)
    if node in ctx.fused:  # runs in its producer's epilogue (LoweringContext.output)
        fused = ctx.fused.pop(node)
        if fused is not None:
            pre, cmin, cmax = fused
            ctx.graph.add_op(Op("CLAMP", [pre.name], [ctx.output(node).name], {"min": cmin, "max": cmax}, src))
        return
    x, out = ctx.shared(node)
    cmin, cmax = clamp_codes(node, x)
    ctx.graph.add_op(Op("CLAMP", [x.name], [out.name], {"min": cmin, "max": cmax}, src))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration."""
    if rules.canonical_op(node.target) == "aten.clamp" and any(
            isinstance(v, torch.fx.Node) for v in (arg(node, 1, "min", None), arg(node, 2, "max", None))):
        return "with tensor bounds (only numbers)"
    return None
