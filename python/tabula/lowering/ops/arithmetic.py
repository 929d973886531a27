"""add / sub / rsub / mul / neg / div -> RESCALE to int32, ADD / SUB / MUL, RESCALE to the output.

Operands are activations (IR tensors on their own grids) or constants: a Python scalar, or a buffer /
parameter the quantizer left float (:mod:`tabula.quantizer.fold_constants_pass` folded whatever was
computed from them).  Shapes broadcast as NumPy does: an operand of lower rank is first padded with
leading 1s (a RESHAPE, and for a 4-D result a TRANSPOSE to NHWC where the order of its elements
changes); the int32 ops then broadcast as TOSA 1.0 does (equal ranks, each axis equal or 1).

ADD / SUB (``a + alpha*b``, ``a - alpha*b``, ``rsub``: ``b - alpha*a``, with one side possibly a
constant): every term goes to one int32 grid ``sc = (M_1 + M_2) / 2^28``, where ``M`` bounds a term's
real magnitude (an activation: ``|k| * s * 2^bits`` with bits 8 for int8 (|q - zp| <= 255), 15 for
int16; a constant: ``max |c|``), so the sum fits int32 with room to spare (|sum| <= 2^28) and the
factor of each activation's RESCALE stays <= 2^(28 - bits), inside TOSA's apply_scale_32 REQUIRE
(|q - zp| < 2^(shift-1)).  An activation term is ``RESCALE(x, |k| s / sc)``; a constant term
is the int32 constant ``round(c / sc)`` (round half to even), broadcast by the ADD; a negative
coefficient picks SUB instead of ADD.  The result is ``RESCALE(sum, sc / s_out)``.

MUL (``a * b``; ``neg``: ``a * -1``; ``div``: ``a * (1 / b)`` for a constant ``b``): an activation
goes to int32 at its own scale with its zero point removed (``RESCALE(x, 1)``, exact); two activations
multiply exactly (``|product| <= 2^30``, MUL shift 0); a constant ``c`` becomes ``round(c / s_c)``
with ``s_c = max |c| / 2^30`` (30 bits; a scalar is exact: +-2^30) and the MUL shifts the 64-bit
product right by ``bits`` (rounding half up, 2^-15 of an int32 LSB at most), so the product again
fits 2^30; then ``RESCALE(product, s_a s_b 2^shift / s_out)``.
A positive scalar factor (``x * 0.5``, ``x / 3``) is a single ``RESCALE(x, c s_x / s_out)``: one
rounding, no int32 tensor.

int8, one activation and scalars only (``x * 0.5``, ``x + 1``, ``2 - x``, ``-x``, ``x / 3``, ``x * x``):
one TABLE instead, ``table[c + 128] = q(op(dq(c)))`` with the node's own float op over all 256 codes
-- bit-exact with PT2E's quantized graph on every code and about 10x cheaper on a Cortex-M than
the RESCALE / int32 path (one load per element; 256 bytes of flash).

Every RESCALE rounds once (half toward +infinity); the int32 terms are exact to 2^-20 of their range,
so the result is within 0.5 output LSB (plus that) of the exact real arithmetic on the input codes.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch.fx.node import map_arg

from ... import rules
from ...errors import LoweringError
from ...fx import arg, fake_value, is_qdq, node_source
from ...ir import Op
from ...qmath import build_table_int8, quantize_int32_round_half_even

ATEN = ["aten.add", "aten.sub", "aten.rsub", "aten.mul", "aten.neg", "aten.div", "aten.remainder", "aten.fmod",
        "aten.floor_divide"]

#: Ops of one activation and a constant number whose only form is the int8 TABLE (a sawtooth: its jumps
#: defeat TOSA's interpolating int16 TABLE, and its ramps would leave int32): PyTorch's ``remainder``
#: (``x - c * floor(x / c)``, the sign of c) and ``fmod`` (the sign of x).
INT8_ONLY = ("aten.remainder", "aten.fmod")
#: Likewise the staircases of one activation and a constant number, int8 TABLE only: PyTorch's ``floor_divide``
#: (``floor(x / c)``) and ``div`` with ``rounding_mode`` ``"floor"`` / ``"trunc"`` (``trunc(x / c)``).
#: (Their int16 form would be a step plan with one ramp per step -- up to 65,536 -- over an unbounded quotient.)
STAIRCASES = ("aten.floor_divide",)


def _rounding_mode(node):
    return node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)


def _int8_only(node) -> str | None:
    """``"a sawtooth"`` / ``"a staircase"`` for an op whose only form is the int8 TABLE, else None."""
    name = rules.canonical_op(node.target)
    if name in INT8_ONLY:
        return "a sawtooth"
    if name in STAIRCASES or (name == "aten.div" and _rounding_mode(node) is not None):
        return "a staircase"
    return None

#: Bits of |q - zero_point| per activation dtype: int8 codes minus a zero point span 255 < 2^8;
#: int16 is symmetric, |q| <= 2^15.
BITS = {"int8": 8, "int16": 15}
#: ADD / SUB terms and their sum stay within 2^ADD_BITS; MUL products and constants within 2^MUL_BITS.
ADD_BITS = 28
MUL_BITS = 30


# -- the float graph: what the lowering handles (checked before calibration) ----------------------
def _is_const(a) -> bool:
    return isinstance(a, (int, float, bool)) or (hasattr(a, "op") and a.op == "get_attr")


def _const_value(a) -> np.ndarray:
    """A constant operand as float64: a Python number, or a get_attr's tensor."""
    if not hasattr(a, "op"):
        return np.asarray(float(a), np.float64)
    obj = a.graph.owning_module
    for part in str(a.target).split("."):
        obj = getattr(obj, part)
    return obj.detach().to("cpu").double().numpy()


def _terms(node) -> tuple[str, list]:
    """``("add", [(operand, k), (operand, k)])`` for out = sum of k * operand, or
    ``("mul", [(operand, p), (operand, p)])`` for out = product of operand ** p, p = 1 or -1 (div: a
    constant divisor, p = -1; neg: a * -1)."""
    name = rules.canonical_op(node.target)
    a = node.args[0]
    if name == "aten.neg":
        return "mul", [(a, 1), (-1.0, 1)]
    b = arg(node, 1, "other", None)
    if name == "aten.div":
        return "mul", [(a, 1), (b, -1)]
    if name == "aten.mul":
        return "mul", [(a, 1), (b, 1)]
    alpha = float(node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1))
    if name == "aten.rsub":
        return "add", [(b, 1.0), (a, -alpha)]
    return "add", [(a, 1.0), (b, alpha if name == "aten.add" else -alpha)]


def unsupported(node) -> str | None:
    """What this lowering cannot do with ``node`` (a float-graph add/sub/rsub/mul/neg/div), or None."""
    name = rules.canonical_op(node.target)
    if _int8_only(node):
        c = node.args[1] if len(node.args) > 1 else node.kwargs.get("other")
        if hasattr(c, "op") and _is_const(c) and _const_value(c).size == 1:
            c = float(_const_value(c).reshape(-1)[0])  # a lifted scalar tensor (floor_divide(x, 0.5))
        if not isinstance(c, (int, float)) or isinstance(c, bool):
            return "by a tensor (by a constant number only)"
        if c == 0:
            return "by zero"
        if name == "aten.div" and _rounding_mode(node) not in ("floor", "trunc"):
            return f"with rounding_mode={_rounding_mode(node)!r}"
        return None
    if name == "aten.div":
        b = arg(node, 1, "other", None)
        if not _is_const(b):
            return ("by an activation not positive by construction (x / y becomes x * reciprocal(y) when y is an "
                    "exp, sigmoid, softplus, sqrt, abs, relu, a clamp with min >= 0, y * y, or a sum / add / mul of "
                    "those and constants >= 0: quantizer/rewrite_div_pass.py; the reciprocal's domain is [0, inf))")
        if not np.all(_const_value(b) != 0):
            return "by zero"
    for a in node.args[: 1 if name == "aten.neg" else 2]:
        if not (_is_const(a) or hasattr(a, "op")):
            return f"with a {type(a).__name__} operand"
        if _is_const(a) and not np.all(np.isfinite(_const_value(a))):
            return "with a NaN or infinite constant"
    alpha = node.kwargs.get("alpha", 1)
    if not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        return f"with alpha={alpha!r}"
    val = node.meta.get("val")
    rank = len(val.shape) if val is not None else None
    if rank == 0:
        return "of 0-d tensors (give the model tensors of rank 1 or more)"
    if rank is not None and rank > 6:
        return f"of rank {rank} (TOSA allows up to 6)"
    if rank is not None and rank > 4:
        for a in node.args[:2]:
            v = fake_value(a) if hasattr(a, "op") and not _is_const(a) else None
            if v is not None and len(v.shape) == 4:
                return f"broadcasting a 4-D activation to rank {rank}"
    return None


# -- the lowering -------------------------------------------------------------------------------
def _device_const(c: np.ndarray, rank: int) -> np.ndarray:
    """A float constant in PyTorch layout, padded with leading 1s to ``rank`` and in device layout
    (NHWC for rank 4)."""
    c = np.asarray(c, np.float64).reshape((1,) * (rank - np.ndim(c)) + np.shape(c))
    return c.transpose(0, 2, 3, 1) if rank == 4 else c


def _align(ctx, x, torch_shape, rank: int, src: str):
    """Activation ``x`` (IR tensor, PyTorch shape ``torch_shape``) brought to ``rank`` as NumPy
    broadcasting pads it (leading 1s), in device layout: a RESHAPE, and for a 4-D result whose
    channels move (C > 1 and H*W > 1) a RESHAPE to NCHW then a TRANSPOSE to NHWC."""
    if len(x.shape) == rank:
        return x
    padded = (1,) * (rank - len(torch_shape)) + tuple(int(d) for d in torch_shape)
    dev = (padded[0], padded[2], padded[3], padded[1]) if rank == 4 else padded
    moves = rank == 4 and padded[1] > 1 and padded[2] * padded[3] > 1
    cur = ctx.temp(f"{x.name}_r{rank}", padded if moves else dev, x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [x.name], [cur.name], {"shape": list(cur.shape)}, src))
    if moves:
        out = ctx.temp(f"{x.name}_nhwc", dev, x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("TRANSPOSE", [cur.name], [out.name], {"perms": [0, 2, 3, 1]}, src))
        cur = out
    return cur


def _broadcast(a, b) -> tuple[int, ...]:
    """The shape two equal-rank operands broadcast to (a size-1 axis takes the other's size)."""
    return tuple(v if u == 1 else u for u, v in zip(a, b))


def _int32_const(ctx, base: str, values: np.ndarray, scale: float):
    """``round(values / scale)`` (half to even) as an int32 IR constant; the grids are chosen so that
    it fits within 2^30."""
    return ctx.const(base, quantize_int32_round_half_even(values, scale, MUL_BITS), "int32", float(scale))


def lower(ctx, node) -> None:
    src = node_source(node)
    reason = unsupported(node)
    if reason:
        raise LoweringError(f"{src}: {rules.canonical_op(node.target)} {reason}")
    out = ctx.output(node)
    rank = len(out.shape)
    shape = _int8_only(node)
    if shape:
        if out.dtype == "int8" and _unary_table(ctx, node, out, src):
            return
        mode = f" (rounding_mode={_rounding_mode(node)!r})" if rules.canonical_op(node.target) == "aten.div" else ""
        acts = [a for a in node.args if hasattr(a, "op") and not _is_const(a)]
        feeds = [a for a in acts if ctx.input(a, node).dtype != "int8"]
        producers = [_producer(a).name for a in feeds]
        layers = [node.name, *producers] if out.dtype != "int8" else producers
        what = " and ".join(([f"its output is {out.dtype}"] if out.dtype != "int8" else []) + (
            [f"its input (from {', '.join(producers)}) is {ctx.input(feeds[0], node).dtype}"] if feeds else []))
        raise LoweringError(f"{src}: {rules.canonical_op(node.target)}{mode}: {shape} has an int8 form only, and {what}; "
                            f"put {' and '.join(layers)} in int8: precision={','.join(n + '=int8' for n in layers)} "
                            "(scons; in Python precision={" + ", ".join(f"'{n}': 'int8'" for n in layers) + "})")
    kind, terms = _terms(node)
    if all(_is_const(a) for a, _ in terms):
        raise LoweringError(f"{src}: {node.name} has no activation operand (constants are folded by tabula.quantize)")
    if out.dtype == "int8" and _unary_table(ctx, node, out, src):
        return
    if kind == "add":
        _lower_add(ctx, node, out, rank, terms, src)
    else:
        (a, _), (b, p) = sorted(terms, key=lambda t: _is_const(t[0]))  # the activation first
        _lower_mul(ctx, node, out, rank, a, b, p < 0, src)


def _producer(n):
    """The node that computes ``n``'s value: ``n`` with the quantize / dequantize nodes before it skipped
    (the name a ``precision=`` key gives a layer)."""
    while is_qdq(n) and n.args and hasattr(n.args[0], "op"):
        n = n.args[0]
    return n


def _unary_table(ctx, node, out, src) -> bool:
    """int8 ``op(x, scalars)`` of one activation ``x`` (or ``x op x``) with the output shape of ``x``:
    append the TABLE of the node's own float op over every input code and return True; else False."""
    args = [a for a in list(node.args) + list(node.kwargs.values()) if hasattr(a, "op")]
    acts = {a for a in args if not _is_const(a)}
    if len(acts) != 1:
        return False
    (a,) = acts
    x = ctx.input(a, node)
    if x.dtype != "int8" or x.shape != out.shape:
        return False
    values = {c: torch.from_numpy(_const_value(c).astype(np.float32)) for c in args if _is_const(c)}
    if any(v.numel() != 1 or v.dim() > len(out.shape) for v in values.values()):
        return False  # a per-element constant: the int32 path

    def f(v: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(v)
        call = map_arg((node.args, node.kwargs), lambda n: t if n is a else values[n])
        return node.target(*call[0], **call[1]).reshape(-1).numpy()

    table = build_table_int8(f, x.scale, x.zero_point, out.scale, out.zero_point)
    t = ctx.const(f"{node.name}_table", table, "int8")
    ctx.graph.add_op(Op("TABLE", [x.name, t.name], [out.name], {"elementwise": rules.canonical_op(node.target)}, src))
    return True


def _activation(ctx, a, node, rank, src):
    x = ctx.input(a, node)
    return _align(ctx, x, fake_value(a).shape, rank, src)


def _lower_add(ctx, node, out, rank, terms, src) -> None:
    acts = [(a, k) for a, k in terms if not _is_const(a) and k != 0.0]
    const = sum((k * _const_value(a) for a, k in terms if _is_const(a)), np.zeros(()))
    xs = [(_activation(ctx, a, node, rank, src), k) for a, k in acts]
    c = _device_const(const, rank) if np.any(const != 0) else None
    if c is None and len(xs) == 1 and xs[0][1] > 0 and xs[0][0].shape == out.shape:
        x, k = xs[0]  # a + 0, a - 0: one RESCALE
        ctx.rescale(x, out, src, scale=k * float(x.scale) / float(out.scale))
        return
    bound = sum(abs(k) * float(x.scale) * 2 ** BITS[x.dtype] for x, k in xs) + (float(np.abs(c).max()) if c is not None else 0.0)
    sc = bound / 2**ADD_BITS
    ints = []  # (int32 tensor, sign)
    for i, (x, k) in enumerate(xs):
        t = ctx.temp(f"{node.name}_{'ab'[i]}32", x.shape, "int32", sc)
        ctx.rescale(x, t, src, scale=abs(k) * float(x.scale) / sc)
        ints.append((t, 1 if k > 0 else -1))
    if c is not None:
        ints.append((_int32_const(ctx, f"{node.name}_const", c, sc), 1))
    if len(ints) == 1:  # -a: 0 - a
        ints.insert(0, (_int32_const(ctx, f"{node.name}_zero", np.zeros((1,) * rank), sc), 1))
    (p, sp), (q, sq) = ints
    if sp < 0:
        (p, sp), (q, sq) = (q, sq), (p, sp)
    op = "ADD" if sq > 0 else "SUB"
    if sp < 0:  # -a - b never arises: add/sub/rsub give the first term +1, a constant is folded positive
        raise LoweringError(f"{src}: {node.name}: both terms negative")
    acc = ctx.temp(f"{node.name}_acc", _broadcast(p.shape, q.shape), "int32", sc)
    ctx.graph.add_op(Op(op, [p.name, q.name], [acc.name], {}, src))
    ctx.rescale(acc, out, src, scale=sc / float(out.scale))


def _lower_mul(ctx, node, out, rank, a, b, reciprocal: bool, src) -> None:
    x = _activation(ctx, a, node, rank, src)
    if _is_const(b):
        c = _const_value(b)
        c = 1.0 / c if reciprocal else c
        c = _device_const(c, rank)
        first = float(c.reshape(-1)[0])
        uniform = bool(np.all(c == first))
        if uniform and first > 0 and x.shape == out.shape:  # x * 0.5, x / 3: one RESCALE
            ctx.rescale(x, out, src, scale=first * float(x.scale) / float(out.scale))
            return
        peak = float(np.abs(c).max())
        s_c = peak / 2**MUL_BITS if peak > 0 else 1.0
        yb = _int32_const(ctx, f"{node.name}_const", c, s_c)
        s_b, shift = s_c, BITS[x.dtype]
    else:
        y = _activation(ctx, b, node, rank, src)
        yb = None if y.name == x.name else ctx.temp(f"{node.name}_b32", y.shape, "int32", float(y.scale))
        if yb is not None:
            ctx.rescale(y, yb, src, scale=1.0)
        s_b, shift = float(y.scale), 0
    xa = ctx.temp(f"{node.name}_a32", x.shape, "int32", float(x.scale))
    ctx.rescale(x, xa, src, scale=1.0)
    yb = xa if yb is None else yb  # x * x: one RESCALE
    s_acc = float(x.scale) * s_b * 2**shift
    acc = ctx.temp(f"{node.name}_acc", _broadcast(xa.shape, yb.shape), "int32", s_acc)
    ctx.graph.add_op(Op("MUL", [xa.name, yb.name], [acc.name], {"shift": shift}, src))
    ctx.rescale(acc, out, src, scale=s_acc / float(out.scale))
