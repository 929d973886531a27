"""softmax / _softmax (any dim; ``rules.FIXED_OUTPUT``) -> TOSA integer ops, per :mod:`tabula.qmath.softmax`.

The plan (exp tables, shifts, multipliers; every integer range proved over every possible row of the
axis's length, and the error bound) comes from :func:`tabula.qmath.build_softmax_plan`.  The op
sequence, ``d`` the row differences and ``e`` their fixed-point exps (4-D tensors are NHWC: PyTorch's
dim is mapped to the IR axis)::

    x32 = RESCALE(x, x1)                  int32      d = SUB(x32, TILE(REDUCE_MAX(x32)))
    one level (int8; int16 at large scales):
        idx = RESCALE(d, x2^7) -> int16 (saturating)       e = EXP(idx, A)
    two levels (int16):
        a = RESCALE(d, x2^-k)   b = SUB(d, RESCALE(a, x2^k))
        e = MUL(EXP(RESCALE(a, x2^7) -> int16, A), EXP(RESCALE(b, x2^7) -> int16, B), shift)
    with EXP(idx, T) = ADD(TABLE(idx, T_hi), RESCALE(TABLE(idx, T_lo), x2^-7))  (exact knots: no
    interpolation)
    S = REDUCE_SUM(e)   D = RESCALE(S, 1/lam)   H = RESCALE(S, 1/(2 lam))
    q = INTDIV(ADD(MUL(e, TILE(Qc), shN), TILE(H)), TILE(D))        y = RESCALE(q, x1) + zero point

The first op carries ``attrs["softmax"]``: ``axis``, ``row_len``, ``form``, ``split_bits``,
``error_bound_lsb``, ``input``, ``output``, ``internal`` (the intermediates) and ``roles`` (one name
per op of the sequence, in order): codegen runs the whole sequence as one kernel
(:func:`tabula.codegen.fusion.fuse_softmax`).
"""
from __future__ import annotations

import numpy as np
import torch
from torch.fx import Node

from ... import rules
from ...errors import LoweringError
from ...fx import arg, node_source
from ...ir import Op
from ...qmath import QuantizationError
from ...qmath.softmax import SOFTMAX_INDEX_MIN, SOFTMAX_MAX_ROW, SoftmaxPlan, build_softmax_plan, knot_tables_int16, \
    softmax_too_long
from ._common import device_axis

ATEN = ["aten.softmax", "aten._softmax"]


def unsupported(node, dtype: str | None = None) -> str | None:
    """Why this captured softmax cannot be lowered (listed before calibration), or None: a softmax axis
    longer than the integer softmax takes in ``dtype`` (the scheme's activation dtype, ``"int8"`` or
    ``"int16"``; None: the stricter of the two), :data:`tabula.qmath.softmax.SOFTMAX_MAX_ROW`, known
    from the shapes."""
    dtype = dtype if dtype in SOFTMAX_MAX_ROW else min(SOFTMAX_MAX_ROW, key=SOFTMAX_MAX_ROW.get)
    x = node.args[0] if node.args else None
    val = x.meta.get("val") if isinstance(x, Node) else None
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", -1)
    if val is not None and isinstance(dim, int) and val.dim() and val.shape[dim] > SOFTMAX_MAX_ROW[dtype]:
        return softmax_too_long(dtype, int(val.shape[dim])).removeprefix("softmax ")  # "over rows of ..."
    return None

def lower(ctx, node) -> None:
    src = node_source(node)
    name = rules.canonical_op(node.target)
    if name == "aten.softmax":
        dt = arg(node, 2, "dtype", None)
        if dt not in (None, torch.float32):
            raise LoweringError(f"{src}: softmax with dtype={dt} is not supported (leave dtype unset)")
    elif arg(node, 2, "half_to_float", False):
        raise LoweringError(f"{src}: _softmax with half_to_float=True is not supported")
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if x.dtype not in ("int8", "int16") or out.dtype != x.dtype:
        raise LoweringError(f"{src}: softmax maps int8 -> int8 or int16 -> int16, got {x.dtype} -> {out.dtype}")
    rank = len(x.shape)
    dim = int(arg(node, 1, "dim", -1))
    if not -rank <= dim < rank:
        raise LoweringError(f"{src}: softmax dim {dim} outside a rank-{rank} tensor")
    axis = device_axis(dim, rank)
    try:
        plan = build_softmax_plan(float(x.scale), x.dtype, x.shape[axis], float(out.scale), int(out.zero_point))
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e
    emit_softmax(ctx, node.name, x, out, axis, plan, src)


def emit_softmax(ctx, base: str, x, out, axis: int, plan: SoftmaxPlan, src: str) -> None:
    """Append the op sequence of ``out = softmax(x)`` along IR ``axis`` (module docstring), with the
    constants of ``plan`` (built for ``x``'s scale, the axis length and ``out``'s grid)."""
    g = ctx.graph
    shape = tuple(x.shape)
    rank = len(shape)
    row = tuple(1 if i == axis else n for i, n in enumerate(shape))
    along = [shape[axis] if i == axis else 1 for i in range(rank)]
    internal: list[str] = []
    roles: list[str] = []
    meta = {"axis": axis, "row_len": plan.row_len, "form": "two-level" if plan.two_level else "one-level",
            "split_bits": plan.split_bits, "error_bound_lsb": round(plan.error_bound_lsb, 4),
            "input": x.name, "output": out.name, "internal": internal, "roles": roles}

    def temp(name, shp, dtype, scale=None):
        t = ctx.temp(f"{base}_{name}", shp, dtype, scale)
        internal.append(t.name)
        return t

    def op(role, name, inputs, output, attrs=None):
        g.add_op(Op(name, [t.name for t in inputs], [output.name], attrs or {}, src))
        roles.append(role)
        return output

    def rescale(role, v, dst, scale):
        ctx.rescale(v, dst, src, scale=scale)
        roles.append(role)
        return dst

    def tile(role, v, multiples, dtype="int32"):
        return op(role, "TILE", [v], temp(role, tuple(n * m for n, m in zip(v.shape, multiples)), dtype),
                  {"multiples": list(multiples)})

    def exp(prefix, idx, knots, first):
        hi, lo = knot_tables_int16(knots, first)
        t_hi = ctx.const(f"{base}_exp_{prefix}_hi", hi, "int16")
        t_lo = ctx.const(f"{base}_exp_{prefix}_lo", lo, "int16")
        v_hi = op(f"{prefix}_hi", "TABLE", [idx, t_hi], temp(f"{prefix}_hi", shape, "int32"), {"part": f"softmax {prefix}_hi"})
        v_lo = op(f"{prefix}_lo", "TABLE", [idx, t_lo], temp(f"{prefix}_lo", shape, "int32"), {"part": f"softmax {prefix}_lo"})
        v_lo = rescale(f"{prefix}_lo_down", v_lo, temp(f"{prefix}_lo_down", shape, "int32"), 2.0**-7)
        return v_hi, v_lo

    s = float(x.scale)
    x32 = rescale("x32", x, temp("x32", shape, "int32", s), 1.0)
    g.ops[-1].attrs["softmax"] = meta
    mx = op("max", "REDUCE_MAX", [x32], temp("max", row, "int32", s), {"axis": axis})
    d = op("d", "SUB", [x32, tile("max_tiled", mx, along)], temp("d", shape, "int32", s))
    if not plan.two_level:
        idx = rescale("idx", d, temp("idx", shape, "int16"), 2.0**7)
        e = op("e", "ADD", list(exp("a", idx, plan.exp_hi, 0)), temp("e", shape, "int32"))
    else:
        k = plan.split_bits
        a = rescale("a", d, temp("a", shape, "int32"), 2.0**-k)
        b = op("b", "SUB", [d, rescale("a_up", a, temp("a_up", shape, "int32"), 2.0**k)], temp("b", shape, "int32"))
        idx_a = rescale("idx_a", a, temp("idx_a", shape, "int16"), 2.0**7)
        idx_b = rescale("idx_b", b, temp("idx_b", shape, "int16"), 2.0**7)
        exp_a = op("exp_a", "ADD", list(exp("a", idx_a, plan.exp_hi, 0)), temp("exp_a", shape, "int32"))
        exp_b = op("exp_b", "ADD", list(exp("b", idx_b, plan.exp_lo, -SOFTMAX_INDEX_MIN - (1 << k >> 1))),
                   temp("exp_b", shape, "int32"))
        e = op("e", "MUL", [exp_a, exp_b], temp("e", shape, "int32"), {"shift": plan.exp_shift})
    total = op("sum", "REDUCE_SUM", [e], temp("sum", row, "int32"), {"axis": axis})
    den = rescale("den", total, temp("den", row, "int32"), plan.d_scale[0] * 2.0 ** -plan.d_scale[1])
    half = rescale("half", total, temp("half", row, "int32"), plan.h_scale[0] * 2.0 ** -plan.h_scale[1])
    den_t, half_t = tile("den_tiled", den, along), tile("half_tiled", half, along)
    qk = ctx.const(f"{base}_q_mult", np.full((1,) * rank, plan.q_mult), "int32")
    q_t = tile("q_tiled", qk, shape)
    n = op("n", "MUL", [e, q_t], temp("n", shape, "int32"), {"shift": plan.q_shift})
    num = op("num", "ADD", [n, half_t], temp("num", shape, "int32"))
    quot = op("quot", "INTDIV", [num, den_t], temp("quot", shape, "int32"))
    rescale("y", quot, out, 1.0)
