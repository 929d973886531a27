"""any of a boolean mask over a dim, dims or every element -> one REDUCE_MAX per dim on its int8 0 / 1.

PyTorch ``aten.any.dim`` (self, dim, keepdim), ``aten.any.dims`` (self, dim=None, keepdim; ``None``: every
dim, ``[]``: none, the mask itself), ``aten.any.default`` (every element, a 0-d result: shape (1,) in the IR).
TOSA 1.0's REDUCE_ANY on ``bool_t`` is, on the IR's 0 / 1 masks, REDUCE_MAX exactly (the max of 0s and 1s is
1 when any is 1), so the export stays int8; the reduction and the output's view are amax's
(:func:`.reduce.reduce_dims`).
"""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import arg, node_source
from .logical import mask_operands_problem
from .reduce import reduce_dims

ATEN = ["aten.any"]


def lower(ctx, node) -> None:
    x = ctx.input(node.args[0], node)
    if x.dtype != "int8":
        raise LoweringError(f"{node_source(node)}: {node.name}'s input {x.name} is not a boolean mask")
    out = ctx.raw_output(node, "int8")
    rank = len(x.shape)
    if node.target._overloadname == "default":
        dims = range(rank)
    else:
        dims = arg(node, 1, "dim", None)
        dims = range(rank) if dims is None else [dims] if isinstance(dims, int) else list(dims)
    reduce_dims(ctx, node, x, out, "REDUCE_MAX", dims)


def unsupported(node) -> str | None:
    """Why this any cannot be lowered (listed before calibration), or None: its input must be a boolean mask."""
    return mask_operands_problem(node, node.args[:1])
