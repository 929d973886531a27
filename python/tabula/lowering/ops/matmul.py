"""aten.matmul / bmm / mm of two activations -> MATMUL (TOSA 1.0) + RESCALE.

``[N, H, C] @ [N, C, W]`` is one MATMUL into the accumulator (int32 for int8, int48 for int16) at
scale ``s_a * s_b``, then a RESCALE by ``s_a * s_b / s_out``.  A 2-D ``[H, C] @ [C, W]`` is the same
with N = 1 (RESHAPEs around it).  A 4-D ``[B, G, H, C] @ [B, G, C, W]`` (attention heads: G heads
of B batches) is one MATMUL over ``N = B * G``: each operand (NHWC on the device) is brought to
PyTorch's order and viewed as 3-D (``reshape.reshape_to``: a TRANSPOSE and a RESHAPE), and the
result goes back the same way.  Other ranks, or batch dims that differ (broadcasting), are refused
(:func:`unsupported`: the quantizer lists them up front).
"""
from __future__ import annotations

from torch.fx import Node

from ... import dtypes, rules
from ...errors import LoweringError
from ...fx import node_source
from ...ir import Op

ATEN = ["aten.matmul", "aten.bmm", "aten.mm"]


def unsupported(node) -> str | None:
    """Why this captured matmul / bmm / mm cannot be lowered (listed before calibration), or None: its
    operands must be 2-D or 3-D, of one rank and one batch (no broadcasting)."""
    operands = [node.args[i] for i in rules.MATMUL[rules.canonical_op(node.target)]]
    shapes = [tuple(v.meta["val"].shape) if isinstance(v, Node) and "val" in v.meta else None for v in operands]
    if None not in shapes and not (len(shapes[0]) == len(shapes[1]) in (2, 3, 4) and shapes[0][:-2] == shapes[1][:-2]):
        return f"of shapes {shapes[0]} and {shapes[1]} (2-D, 3-D or 4-D operands of one rank and batch)"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    ia, ib = rules.MATMUL[rules.canonical_op(node.target)]
    a, b = ctx.input(node.args[ia], node), ctx.input(node.args[ib], node)
    out = ctx.output(node)
    if len(a.shape) == len(b.shape) == 4:
        _lower_4d(ctx, node, a, b, out, src)
        return
    if not (len(a.shape) == len(b.shape) in (2, 3) and a.shape[:-2] == b.shape[:-2] and a.shape[-1] == b.shape[-2]):
        raise LoweringError(f"{src}: matmul of {a.shape} and {b.shape} is not supported (2-D or 3-D operands of one "
                            "rank and batch, [.., H, C] @ [.., C, W])")
    if len(a.shape) == 2:
        a = _reshaped(ctx, a, (1, *a.shape), f"{node.name}_a3", src)
        b = _reshaped(ctx, b, (1, *b.shape), f"{node.name}_b3", src)
    shape = (a.shape[0], a.shape[1], b.shape[2])
    acc = ctx.temp(f"{node.name}_acc", shape, dtypes.ACC_DTYPE[a.dtype], float(a.scale) * float(b.scale))
    ctx.graph.add_op(Op("MATMUL", [a.name, b.name], [acc.name],
                        {"a_zp": int(a.zero_point), "b_zp": int(b.zero_point)}, src))
    if len(out.shape) == 3:
        ctx.rescale(acc, out, src, scale=float(acc.scale) / float(out.scale))
        return
    out3 = ctx.temp(f"{node.name}_out3", shape, out.dtype, out.scale, out.zero_point)
    ctx.rescale(acc, out3, src, scale=float(acc.scale) / float(out.scale))
    ctx.graph.add_op(Op("RESHAPE", [out3.name], [out.name], {"shape": list(out.shape)}, src))


def _reshaped(ctx, t, shape, base, src):
    r = ctx.temp(base, shape, t.dtype, t.scale, t.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [t.name], [r.name], {"shape": list(shape)}, src))
    return r


def _lower_4d(ctx, node, a, b, out, src) -> None:
    """``[B, G, H, C] @ [B, G, C, W]`` (NHWC on the device: ``[B, H, C, G]``, ``[B, C, W, G]``) as one
    3-D MATMUL over ``N = B * G`` (module doc)."""
    from .reshape import reshape_to

    (bn, h, c, g), (_, c2, w, g2) = a.shape, b.shape
    if (bn, g, c) != (b.shape[0], g2, c2):
        raise LoweringError(f"{src}: matmul of [B, G, H, C] = {[bn, g, h, c]} and [B, G, C, W] = "
                            f"{[b.shape[0], g2, c2, w]}: batch and inner dims must match")
    a3 = ctx.temp(f"{node.name}_a3", (bn * g, h, c), a.dtype, a.scale, a.zero_point)
    b3 = ctx.temp(f"{node.name}_b3", (bn * g, c, w), b.dtype, b.scale, b.zero_point)
    reshape_to(ctx, node, a, a3)
    reshape_to(ctx, node, b, b3)
    acc = ctx.temp(f"{node.name}_acc", (bn * g, h, w), dtypes.ACC_DTYPE[a.dtype], float(a.scale) * float(b.scale))
    ctx.graph.add_op(Op("MATMUL", [a3.name, b3.name], [acc.name],
                        {"a_zp": int(a.zero_point), "b_zp": int(b.zero_point)}, src))
    out3 = ctx.temp(f"{node.name}_out3", (bn * g, h, w), out.dtype, out.scale, out.zero_point)
    ctx.rescale(acc, out3, src, scale=float(acc.scale) / float(out.scale))
    reshape_to(ctx, node, out3, out)
