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
from ...qmath.softmax_npu import SoftmaxNpuPlan, exp_digit_tables
from ._common import device_axis

ATEN = ["aten.softmax", "aten._softmax", "tabula.softmax"]

#: What a masked position adds to its int32 input code (``x - zp``, at most 2^16 in size): every kept
#: code of the row exceeds every masked one, so the row's max is a kept code, and the masked
#: differences saturate the exp index to its minimum -- within each RESCALE's TOSA REQUIRE
#: (``|d| < 2^22`` for the x 2^7 index).
MASK_BIAS = -(1 << 20)


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
    elif name == "aten._softmax" and arg(node, 2, "half_to_float", False):
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
    factor, keep = 1.0, None
    if name == "tabula.softmax":  # softmax(scale * x) over the kept positions (tabula.quantizer.softmax_op)
        factor = float(node.args[2])
        if not factor > 0:
            raise LoweringError(f"{src}: attention scale {factor} must be > 0")
        keep_node = arg(node, 3, "keep", None)
        if keep_node is not None:
            keep = _keep_mask(ctx, keep_node, node, rank, src)
    try:
        plan = build_softmax_plan(float(x.scale) * factor, x.dtype, x.shape[axis], float(out.scale), int(out.zero_point))
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e
    emit_softmax(ctx, node.name, x, out, axis, plan, src, keep=keep, input_scale=float(x.scale) * factor)


def _keep_mask(ctx, keep_node, node, rank: int, src: str) -> np.ndarray:
    """The boolean keep mask (a constant of PyTorch's layout, broadcastable to the input) as a numpy
    array of the input's rank in the device layout (NHWC for 4-D), still broadcastable."""
    keep = ctx._attr(keep_node).numpy().astype(bool)
    if keep.ndim > rank:
        raise LoweringError(f"{src}: softmax mask of rank {keep.ndim} for a rank-{rank} input")
    keep = keep.reshape((1,) * (rank - keep.ndim) + keep.shape)
    return keep.transpose(0, 2, 3, 1) if rank == 4 else keep


class _Sequence:
    """One softmax op sequence under construction: its intermediates (``internal``), one role per op
    (``roles``, in order) and the helpers that append ops to the IR graph."""

    def __init__(self, ctx, base: str, src: str):
        self.ctx, self.g, self.base, self.src = ctx, ctx.graph, base, src
        self.internal: list[str] = []
        self.roles: list[str] = []

    def temp(self, name, shp, dtype, scale=None, zero_point: int = 0):
        t = self.ctx.temp(f"{self.base}_{name}", shp, dtype, scale, zero_point)
        self.internal.append(t.name)
        return t

    def op(self, role, name, inputs, output, attrs=None):
        self.g.add_op(Op(name, [t.name for t in inputs], [output.name], attrs or {}, self.src))
        self.roles.append(role)
        return output

    def rescale(self, role, v, dst, scale):
        self.ctx.rescale(v, dst, self.src, scale=scale)
        self.roles.append(role)
        return dst

    def tile(self, role, v, multiples, dtype="int32"):
        return self.op(role, "TILE", [v], self.temp(role, tuple(n * m for n, m in zip(v.shape, multiples)), dtype),
                       {"multiples": list(multiples)})

    def exp16(self, prefix, idx, knots, first, shape):
        """``TABLE(idx, hi) + RESCALE(TABLE(idx, lo), x2^-7)``: exact knots of an int16 TABLE pair (two values)."""
        hi, lo = knot_tables_int16(knots, first)
        t_hi = self.ctx.const(f"{self.base}_exp_{prefix}_hi", hi, "int16")
        t_lo = self.ctx.const(f"{self.base}_exp_{prefix}_lo", lo, "int16")
        v_hi = self.op(f"{prefix}_hi", "TABLE", [idx, t_hi], self.temp(f"{prefix}_hi", shape, "int32"),
                       {"part": f"softmax {prefix}_hi"})
        v_lo = self.op(f"{prefix}_lo", "TABLE", [idx, t_lo], self.temp(f"{prefix}_lo", shape, "int32"),
                       {"part": f"softmax {prefix}_lo"})
        v_lo = self.rescale(f"{prefix}_lo_down", v_lo, self.temp(f"{prefix}_lo_down", shape, "int32"), 2.0**-7)
        return v_hi, v_lo

    def exps16(self, d, plan: SoftmaxPlan, shape):
        """``e = E exp(s d)`` from int16 TABLE knots: one level, or two levels (``d = K a + b``)."""
        if not plan.two_level:
            idx = self.rescale("idx", d, self.temp("idx", shape, "int16"), 2.0**7)
            return self.op("e", "ADD", list(self.exp16("a", idx, plan.exp_hi, 0, shape)), self.temp("e", shape, "int32"))
        k = plan.split_bits
        a = self.rescale("a", d, self.temp("a", shape, "int32"), 2.0**-k)
        b = self.op("b", "SUB", [d, self.rescale("a_up", a, self.temp("a_up", shape, "int32"), 2.0**k)],
                    self.temp("b", shape, "int32"))
        idx_a = self.rescale("idx_a", a, self.temp("idx_a", shape, "int16"), 2.0**7)
        idx_b = self.rescale("idx_b", b, self.temp("idx_b", shape, "int16"), 2.0**7)
        exp_a = self.op("exp_a", "ADD", list(self.exp16("a", idx_a, plan.exp_hi, 0, shape)), self.temp("exp_a", shape, "int32"))
        exp_b = self.op("exp_b", "ADD", list(self.exp16("b", idx_b, plan.exp_lo, -SOFTMAX_INDEX_MIN - (1 << k >> 1), shape)),
                        self.temp("exp_b", shape, "int32"))
        return self.op("e", "MUL", [exp_a, exp_b], self.temp("e", shape, "int32"), {"shift": plan.exp_shift})


def emit_softmax(ctx, base: str, x, out, axis: int, plan: SoftmaxPlan, src: str, keep: np.ndarray | None = None,
                 input_scale: float | None = None) -> None:
    """Append the op sequence of ``out = softmax(x)`` along IR ``axis`` (module docstring), with the
    constants of ``plan`` (built for ``x``'s scale -- or ``input_scale``, an attention's scale folded in --
    the axis length and ``out``'s grid).

    ``keep`` (bool, the IR rank, broadcastable to ``x``): a masked softmax.  ``ADD(x32, bias)`` with
    :data:`MASK_BIAS` at the masked positions takes them out of the row's max (and saturates their
    exp index), ``MUL(e, keep)`` zeroes their exps before the sum, and their quotient is then
    ``(0 + S/2) // S = 0``: code ``zero_point``, exactly 0.  The kept positions get what a softmax over
    the kept ones alone gives, bit for bit, with the same bounds.  (Roles ``mask_bias``, ``mask_keep``:
    the fused kernel does not take them, so a masked softmax runs op by op; ``meta["masked"]`` counts
    the masked positions and ``meta["input_scale"]`` is the scale the plan was built for.)"""
    shape = tuple(x.shape)
    rank = len(shape)
    row = tuple(1 if i == axis else n for i, n in enumerate(shape))
    along = [shape[axis] if i == axis else 1 for i in range(rank)]
    q = _Sequence(ctx, base, src)
    meta = {"axis": axis, "row_len": plan.row_len, "form": "two-level" if plan.two_level else "one-level",
            "split_bits": plan.split_bits, "error_bound_lsb": round(plan.error_bound_lsb, 4),
            "input": x.name, "output": out.name, "internal": q.internal, "roles": q.roles,
            "input_scale": float(x.scale) if input_scale is None else float(input_scale)}
    s = float(x.scale)
    x32 = q.rescale("x32", x, q.temp("x32", shape, "int32", s), 1.0)
    q.g.ops[-1].attrs["softmax"] = meta
    if keep is not None:
        if not np.broadcast_to(keep, shape).any(axis=axis).all():
            raise LoweringError(f"{src}: softmax mask hides every position of a row (PyTorch gives NaN there)")
        bias_c = ctx.const(f"{base}_mask_bias", np.where(keep, 0, MASK_BIAS).astype(np.int32), "int32")
        x32 = q.op("mask_bias", "ADD", [x32, bias_c], q.temp("x32_masked", shape, "int32", s))
        meta["masked"] = int((~np.broadcast_to(keep, shape)).sum())
    mx = q.op("max", "REDUCE_MAX", [x32], q.temp("max", row, "int32", s), {"axis": axis})
    d = q.op("d", "SUB", [x32, q.tile("max_tiled", mx, along)], q.temp("d", shape, "int32", s))
    e = q.exps16(d, plan, shape)
    if keep is not None:
        keep_c = ctx.const(f"{base}_keep", keep.astype(np.int32), "int32")
        e = q.op("mask_keep", "MUL", [e, keep_c], q.temp("e_kept", shape, "int32"), {"shift": 0})
    total = q.op("sum", "REDUCE_SUM", [e], q.temp("sum", row, "int32"), {"axis": axis})
    den = q.rescale("den", total, q.temp("den", row, "int32"), plan.d_scale[0] * 2.0 ** -plan.d_scale[1])
    half = q.rescale("half", total, q.temp("half", row, "int32"), plan.h_scale[0] * 2.0 ** -plan.h_scale[1])
    den_t, half_t = q.tile("den_tiled", den, along), q.tile("half_tiled", half, along)
    qk = ctx.const(f"{base}_q_mult", np.full((1,) * rank, plan.q_mult), "int32")
    q_t = q.tile("q_tiled", qk, shape)
    n = q.op("n", "MUL", [e, q_t], q.temp("n", shape, "int32"), {"shift": plan.q_shift})
    num = q.op("num", "ADD", [n, half_t], q.temp("num", shape, "int32"))
    quot = q.op("quot", "INTDIV", [num, den_t], q.temp("quot", shape, "int32"))
    q.rescale("y", quot, out, 1.0)


def emit_softmax_npu(ctx, base: str, x, out, axis: int, plan: SoftmaxNpuPlan, src: str) -> None:
    """Append the NPU form of ``out = softmax(x)`` along IR ``axis`` (:mod:`tabula.qmath.softmax_npu`: no
    INTDIV, REDUCE_MAX on the input dtype, the row broadcast instead of TILE; int8 exps from three int8
    TABLEs of the knots' base-256 digits), with the constants of ``plan``.  The first op carries
    ``attrs["softmax"]`` with ``form`` ``"npu"``, ``steps`` and the plan's error bound."""
    shape = tuple(x.shape)
    rank = len(shape)
    row = tuple(1 if i == axis else n for i, n in enumerate(shape))
    q = _Sequence(ctx, base, src)
    meta = {"axis": axis, "row_len": plan.row_len, "form": "npu", "exp": "two-level" if plan.base.two_level else
            "one-level", "steps": plan.steps, "error_bound_lsb": round(plan.error_bound_lsb, 4),
            "input": x.name, "output": out.name, "internal": q.internal, "roles": q.roles}
    s = float(x.scale)
    mx = q.op("max", "REDUCE_MAX", [x], q.temp("max", row, x.dtype, s, int(x.zero_point)), {"axis": axis})
    q.g.ops[-1].attrs["softmax"] = meta
    x32 = q.rescale("x32", x, q.temp("x32", shape, "int32", s), 1.0)
    m32 = q.rescale("max32", mx, q.temp("max32", row, "int32", s), 1.0)
    d = q.op("d", "SUB", [x32, m32], q.temp("d", shape, "int32", s))
    if x.dtype == "int8":
        idx = q.rescale("idx", d, q.temp("idx", shape, "int8", None, 127), 1.0)
        parts = []
        for digit, table, up in zip(("e2", "e1", "e0"), exp_digit_tables(plan.base), (2.0**16, 2.0**8, 1.0)):
            t = ctx.const(f"{base}_exp_{digit}", table, "int8")
            v = q.op(f"{digit}_byte", "TABLE", [idx, t], q.temp(f"{digit}_byte", shape, "int8"), {"part": f"softmax {digit}"})
            parts.append(q.rescale(digit, v, q.temp(digit, shape, "int32"), up))
        e = q.op("e", "ADD", [q.op("e21", "ADD", parts[:2], q.temp("e21", shape, "int32")), parts[2]],
                 q.temp("e", shape, "int32"))
    else:
        e = q.exps16(d, plan.base, shape)
    total = q.op("sum", "REDUCE_SUM", [e], q.temp("sum", row, "int32"), {"axis": axis})

    def k(name, value):
        return ctx.const(f"{base}_{name}", np.full((1,) * rank, int(value)), "int32")

    r = q.op("r0", "SUB", [k("r0_a", plan.r0_a), q.op("r0_bs", "MUL", [total, k("r0_b", plan.r0_b)],
                                                      q.temp("r0_bs", row, "int32"), {"shift": plan.r0_shift})],
             q.temp("r0", row, "int32"))
    two30 = k("two30", 1 << 30)
    for i in range(plan.steps):
        t = q.op(f"t{i}", "MUL", [total, r], q.temp(f"t{i}", row, "int32"), {"shift": plan.p - 29})
        u = q.op(f"u{i}", "SUB", [two30, t], q.temp(f"u{i}", row, "int32"))
        r = q.op(f"r{i + 1}", "MUL", [r, u], q.temp(f"r{i + 1}", row, "int32"), {"shift": 29})
    n = q.op("n", "MUL", [e, r], q.temp("n", shape, "int32"), {"shift": plan.p - 30})
    q.rescale("y", n, out, plan.out_scale[0] * 2.0 ** -plan.out_scale[1])
