"""gt / ge / lt / le / eq / ne -> GREATER / GREATER_EQUAL / EQUAL on int32 codes, a boolean mask out (int8 0 / 1,
never quantized: :meth:`tabula.lowering.pipeline.LoweringContext.raw_output`).

Two tensors share one grid (``rules.COMPARISON``), so their codes order as their values do::

    a32 = RESCALE(a, x1) - zp,  b32 likewise;   gt: GREATER(a32, b32)   lt: GREATER(b32, a32)
    ge / le: GREATER_EQUAL;  eq: EQUAL;  ne: BITWISE_XOR(EQUAL(a32, b32), 1)

A tensor against a number ``c`` compares the codes with one threshold code, found by making PyTorch's own
float32 comparison ``dq(code) op c`` on every code of the dtype: exact on every input (gt / ge: the first
code that passes, ``code >= t``; lt / le: the last, ``t >= code``; eq / ne: the one code equal to ``c``, or
none).  Operands of lower rank are RESHAPEd to the output's rank (:func:`aligned`).
"""
from __future__ import annotations

import numpy as np
import torch

from ... import dtypes
from ...errors import LoweringError
from ...fx import fake_value, node_source
from ...ir import Op

ATEN = ["aten.gt", "aten.ge", "aten.lt", "aten.le", "aten.eq", "aten.ne"]

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


def aligned(ctx, node, t, rank: int, base: str):
    """``t`` at ``rank`` dims for a TOSA broadcasting op: itself, or a RESHAPE adding leading 1s (PyTorch's
    broadcasting; a 4-D output is NHWC, so a lower-rank operand of one may only broadcast over C or be a
    scalar).  LoweringError for a layout a RESHAPE cannot give."""
    if len(t.shape) == rank:
        return t
    shape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
    if rank == 4:
        if shape[1] != 1:
            raise LoweringError(f"{node_source(node)}: {node.name}: an operand of shape {tuple(t.shape)} broadcast "
                                "over a 4-D tensor's channels; give it the 4-D shape (N, C, H, W)")
        shape = (shape[0], shape[2], shape[3], shape[1])
    y = ctx.temp(f"{node.name}_{base}", shape, t.dtype, t.scale, t.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [t.name], [y.name], {"shape": list(shape)}, node_source(node)))
    return y


def codes32(ctx, node, t, base: str):
    """``t``'s codes minus its zero point in int32 (RESCALE x1): the operand of the int32 comparisons."""
    y = ctx.temp(f"{node.name}_{base}32", t.shape, "int32", t.scale)
    ctx.rescale(t, y, node_source(node), scale=1.0)
    return y


def _threshold(name: str, x, c: float) -> tuple[str, int, bool]:
    """``(kind, code, swap)`` for ``x op c``: the comparison of ``x``'s codes (minus the zero point) with one
    threshold, exactly as PyTorch compares the dequantized float32 values with ``c``."""
    lo, hi = dtypes.range_of(x.dtype)
    codes = torch.arange(lo, hi + 1, dtype=torch.int32)
    zp = int(x.zero_point)
    values = (codes.to(torch.float32) - zp) * float(x.scale)  # quantized_decomposed.dequantize_per_tensor
    fn = {"aten.gt": torch.gt, "aten.ge": torch.ge, "aten.lt": torch.lt, "aten.le": torch.le,
          "aten.eq": torch.eq, "aten.ne": torch.eq}[name]
    mask = fn(values, c).numpy()
    k = codes.numpy().astype(np.int64) - zp
    hits = k[mask]
    if name in ("aten.eq", "aten.ne"):
        if len(hits) > 1:
            raise LoweringError(f"{name} against {c}: {len(hits)} codes compare equal")
        return "EQUAL", int(hits[0]) if len(hits) else _I32_MAX, False
    if name in ("aten.gt", "aten.ge"):  # passes from the first hit up
        t = int(hits[0]) if len(hits) else _I32_MAX
        assert np.array_equal(mask, k >= t)
        return "GREATER_EQUAL", t, False
    t = int(hits[-1]) if len(hits) else _I32_MIN  # lt / le: passes up to the last hit: t >= code
    assert np.array_equal(mask, k <= t)
    return "GREATER_EQUAL", t, True


def lower(ctx, node) -> None:
    from ...fx import canonical_op

    src = node_source(node)
    name = canonical_op(node.target)
    out = ctx.raw_output(node)
    rank = len(out.shape)
    a, b = node.args[0], node.args[1]
    x = aligned(ctx, node, ctx.input(a, node), rank, "a")
    x32 = codes32(ctx, node, x, "a")
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        op, t, swap = _threshold(name, x, float(b))
        c = ctx.const(f"{node.name}_threshold", np.full((1,) * rank, t, np.int64), "int32")
        pair = [c.name, x32.name] if swap else [x32.name, c.name]
    else:
        y = aligned(ctx, node, ctx.input(b, node), rank, "b")
        if (x.scale, x.zero_point) != (y.scale, y.zero_point):
            raise LoweringError(f"{src}: {node.name} operands have their own grids; quantize with tabula.quantize")
        y32 = codes32(ctx, node, y, "b")
        op = {"aten.gt": "GREATER", "aten.lt": "GREATER", "aten.ge": "GREATER_EQUAL", "aten.le": "GREATER_EQUAL",
              "aten.eq": "EQUAL", "aten.ne": "EQUAL"}[name]
        pair = [y32.name, x32.name] if name in ("aten.lt", "aten.le") else [x32.name, y32.name]
    if name != "aten.ne":
        ctx.graph.add_op(Op(op, pair, [out.name], {}, src))
        return
    eq = ctx.temp(f"{node.name}_eq", out.shape, "int8", 1.0)
    ctx.graph.add_op(Op(op, pair, [eq.name], {}, src))
    one = ctx.const(f"{node.name}_one", np.ones((1,) * rank, np.int64), "int8")
    ctx.graph.add_op(Op("BITWISE_XOR", [eq.name, one.name], [out.name], {}, src))


def unsupported(node) -> str | None:
    """Why this comparison cannot be lowered (listed before calibration), or None."""
    b = node.args[1] if len(node.args) > 1 else None
    if isinstance(b, (bool, complex)):
        return f"against {b!r}"
    vals = [fake_value(a) for a in node.args[:2] if hasattr(a, "meta")]
    if any(v is not None and not v.is_floating_point() for v in vals):
        return "of integer or boolean tensors (compare activations or an activation with a number)"
    return None
