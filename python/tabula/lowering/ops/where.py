"""where(mask, a, b) -> SELECT on the codes: ``a`` and ``b`` share the output's grid (``rules.JOINING_ARGS``),
so the op copies codes, exactly.  The mask is a comparison's int8 0 / 1 or a boolean constant (never
quantized); operands of lower rank are RESHAPEd to the output's rank (:func:`.compare.aligned`).  A number
operand (``where(m, x, 0.0)``) is one constant code on the output's grid: ``q(v)`` as PT2E quantizes the
output (``round_half_even(v * (1 / s)) + zp``, saturated), so the copy is still exact."""
from __future__ import annotations

import numpy as np
import torch

from ... import dtypes
from ...errors import LoweringError
from ...fx import node_source
from ...ir import Op, Tensor
from .compare import aligned

ATEN = ["aten.where"]


def lower(ctx, node) -> None:
    src = node_source(node)
    out = ctx.output(node)
    rank = len(out.shape)
    m = aligned(ctx, node, ctx.input(node.args[0], node), rank, "mask")
    a, b = (aligned(ctx, node, _operand(ctx, node, node.args[i], out), rank, n) for i, n in ((1, "a"), (2, "b")))
    for t in (a, b):
        if (t.scale, t.zero_point) != (out.scale, out.zero_point):
            raise LoweringError(f"{src}: where operand {t.name} has its own grid; quantize with tabula.quantize")
    if m.dtype != "int8":
        raise LoweringError(f"{src}: where's condition {m.name} is not a boolean mask")
    ctx.graph.add_op(Op("SELECT", [m.name, a.name, b.name], [out.name], {}, src))


def _operand(ctx, node, v, out):
    """The IR tensor of a value operand: an activation or quantized constant, or a number as its code."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return ctx.input(v, node)
    lo, hi = dtypes.range_of(out.dtype)
    inv = torch.tensor(1.0 / float(out.scale), dtype=torch.float32)
    code = int(torch.clamp(torch.round(torch.tensor(float(v), dtype=torch.float32) * inv) + int(out.zero_point), lo, hi))
    t = Tensor(ctx.fresh(f"{node.name}_value"), (1,) * len(out.shape), out.dtype, out.scale, int(out.zero_point))
    return ctx.graph.add_tensor(t, np.full(t.shape, code, dtype=t.np_dtype))


def unsupported(node) -> str | None:
    """Why this where cannot be lowered, or None: the one-argument form (nonzero) has no static shape."""
    if len(node.args) < 3:
        return "with one argument (the indices of non-zero elements: a data-dependent shape)"
    return None
