"""embedding(weight, indices) -> GATHER of the table's rows (TOSA 1.0 GATHER), on the table's grid
(``rules.SHARED`` on the weight: the table is quantized per tensor on an activation grid observed over it, and
the output shares it, so the rows are copied, never requantized).

The indices are the int32 values an earlier op wrote (argmax / argmin: tabula's inputs are float), read as
``[1, W]``; the table ``[V, D]`` as ``[1, V, D]``; the ``[1, W, D]`` rows are then RESHAPEd (TRANSPOSEd for a
4-D output) to PyTorch's ``indices.shape + (D,)``.  Constant indices take the constant index map of
:mod:`.gather` instead.  ``padding_idx``, ``scale_grad_by_freq`` and ``sparse`` act on gradients only."""
from __future__ import annotations

from ...errors import LoweringError
from ...fx import canonical_op, fake_value, node_source
from ...ir import Op
from .gather import moved
from .reshape import reshape_to

ATEN = ["aten.embedding"]


def lower(ctx, node) -> None:
    weight, indices = node.args[0], node.args[1]
    if indices.op == "get_attr":
        moved(ctx, node, [0])
        return
    src = node_source(node)
    table, out = ctx.shared(node)
    idx = ctx.input(indices, node)
    if idx.dtype != "int32" or len(table.shape) != 2:
        raise LoweringError(f"{src}: embedding of {idx.dtype} indices into a {len(table.shape)}-D table "
                            "(int32 indices into a [V, D] table only)")
    v, d = table.shape
    w = idx.numel
    if tuple(idx.shape) != (1, w):
        flat = ctx.temp(f"{node.name}_indices", (1, w), "int32", idx.scale)
        ctx.graph.add_op(Op("RESHAPE", [idx.name], [flat.name], {"shape": [1, w]}, src))
        idx = flat
    rows = ctx.temp(f"{node.name}_table", (1, v, d), table.dtype, table.scale, table.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [table.name], [rows.name], {"shape": [1, v, d]}, src))
    picked = ctx.temp(f"{node.name}_rows", (1, w, d), table.dtype, table.scale, table.zero_point)
    ctx.graph.add_op(Op("GATHER", [rows.name, idx.name], [picked.name], {}, src))
    reshape_to(ctx, node, picked, out)


def unsupported(node) -> str | None:
    """Why this embedding cannot be lowered (before calibration), or None: the indices must be constants or
    an argmax / argmin over a dim no longer than the table (every index then a row of it)."""
    weight, indices = node.args[0], node.args[1]
    wv = fake_value(weight)
    if wv is None or wv.dim() != 2:
        return "of a table that is not 2-D"
    if indices.op == "get_attr":
        return None
    if indices.op != "call_function" or canonical_op(indices.target) not in ("aten.argmax", "aten.argmin"):
        return "with indices the model computes other than by argmax / argmin"
    x = fake_value(indices.args[0])
    dim = indices.args[1] if len(indices.args) > 1 else indices.kwargs.get("dim")
    n = x.numel() if dim is None else x.shape[int(dim)]
    if int(n) > int(wv.shape[0]):
        return f"with argmax indices up to {int(n) - 1} into a table of {int(wv.shape[0])} rows"
    return None
