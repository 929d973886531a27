"""and / or / xor / not of boolean masks -> BITWISE_AND / BITWISE_OR / BITWISE_XOR on the IR's int8 0 / 1 masks.

PyTorch: ``aten.logical_and`` / ``logical_or`` / ``logical_xor`` / ``logical_not``, and on bool tensors
``aten.bitwise_and`` / ``bitwise_or`` / ``bitwise_xor`` / ``bitwise_not`` (``&``, ``|``, ``^``, ``~``: in the
exported graph ``aten.__and__`` / ``__or__`` / ``__xor__``).  TOSA 1.0 has LOGICAL_AND / OR / XOR / NOT on
``bool_t``; the IR holds a mask as int8 1 / 0 (a comparison's output: :mod:`.compare`), and on 0 / 1 the
bitwise ops are the logical ones, bit for bit::

    a and b = BITWISE_AND(a, b)   a or b = BITWISE_OR(a, b)   a xor b = BITWISE_XOR(a, b)   not a = BITWISE_XOR(a, 1)

so the masks need no IR op of their own and the TOSA export stays int8 (BITWISE_* of TOSA's INT profile).
A number operand is True or False and folds: ``m & True``, ``m | False``, ``m ^ False`` are ``m`` (a RESHAPE:
the bytes kept); ``m ^ True`` is ``not m``; ``m & False`` / ``m | True`` are the constant mask, written as
``BITWISE_AND(m, 0)`` / ``BITWISE_OR(m, 1)`` so the output is still a tensor the model computes.  Operands
of lower rank are RESHAPEd to the output's rank (:func:`.compare.aligned`; TOSA broadcasts equal ranks).
"""
from __future__ import annotations

import numpy as np
import torch

from ...errors import LoweringError
from ...fx import canonical_op, fake_value, node_source
from ...ir import Op
from .compare import aligned

_AND = ("aten.bitwise_and", "aten.__and__", "aten.logical_and")
_OR = ("aten.bitwise_or", "aten.__or__", "aten.logical_or")
_XOR = ("aten.bitwise_xor", "aten.__xor__", "aten.logical_xor")
_NOT = ("aten.bitwise_not", "aten.logical_not")
ATEN = [*_AND, *_OR, *_XOR, *_NOT]

_OP = {**dict.fromkeys(_AND, "BITWISE_AND"), **dict.fromkeys(_OR, "BITWISE_OR"), **dict.fromkeys(_XOR, "BITWISE_XOR")}


def _mask(ctx, node, v, rank: int, base: str):
    """The int8 0 / 1 IR tensor of mask operand ``v`` at ``rank`` dims; LoweringError when it is none."""
    t = aligned(ctx, node, ctx.input(v, node), rank, base)
    if t.dtype != "int8":
        raise LoweringError(f"{node_source(node)}: {node.name}'s operand {t.name} is not a boolean mask")
    return t


def lower(ctx, node) -> None:
    src = node_source(node)
    name = canonical_op(node.target)
    out = ctx.raw_output(node, "int8")
    rank = len(out.shape)
    a = _mask(ctx, node, node.args[0], rank, "a")
    one = (1,) * rank
    if name in _NOT:
        c = ctx.const(f"{node.name}_one", np.ones(one, np.int64), "int8")
        ctx.graph.add_op(Op("BITWISE_XOR", [a.name, c.name], [out.name], {}, src))
        return
    b = node.args[1]
    if not isinstance(b, bool):
        y = _mask(ctx, node, b, rank, "b")
        ctx.graph.add_op(Op(_OP[name], [a.name, y.name], [out.name], {}, src))
        return
    # a number: m & True = m | False = m ^ False = m;  m ^ True = not m;  m & False = 0, m | True = 1
    if (name in _AND and b) or (name in _OR + _XOR and not b):
        ctx.graph.add_op(Op("RESHAPE", [a.name], [out.name], {"shape": list(out.shape)}, src))
        return
    c = ctx.const(f"{node.name}_{int(b)}", np.full(one, int(b), np.int64), "int8")
    ctx.graph.add_op(Op(_OP[name], [a.name, c.name], [out.name], {}, src))


def unsupported(node) -> str | None:
    """Why this mask op cannot be lowered (listed before calibration), or None: every operand must be a
    boolean tensor (a comparison's mask, a bool constant) or True / False, and the result boolean."""
    return mask_operands_problem(node, node.args[:1] if canonical_op(node.target) in _NOT else node.args[:2])


def mask_operands_problem(node, operands) -> str | None:
    """What is not a boolean mask among ``operands`` of ``node`` (or its result), as the refusal's words, or
    None.  Shared with :mod:`.reduce_any`."""
    for v in operands:
        if isinstance(v, bool):
            continue
        if not hasattr(v, "meta"):
            return f"with the number {v!r} (a mask takes True or False)"
        val = fake_value(v)
        if val is not None and val.dtype != torch.bool:
            what = "float" if val.is_floating_point() else "integer"
            return (f"of {what} tensors (tabula combines boolean masks: compare first, e.g. x != 0)")
    val = fake_value(node)
    if val is not None and val.dtype != torch.bool:
        return f"with a {val.dtype} result (tabula combines boolean masks into a boolean mask)"
    return None
