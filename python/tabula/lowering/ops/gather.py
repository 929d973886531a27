"""Indexing by constant indices -> GATHER of rows by a constant int32 index (TOSA 1.0 GATHER), on the input's
grid (``rules.SHARED``: codes copied, never requantized).

``gather(x, dim, index)``, ``x[..., index]`` (``aten.index``), ``index_select(x, dim, index)``,
``as_strided(x, size, stride, offset)`` (the strides over ``x``'s row-major elements, as ExecuTorch's
``as_strided_copy``) and ``unfold(x, dim, size, step)`` move elements and compute nothing: each output element
is one input element, fixed once the indices are.  The lowering finds that map by calling the op itself on
the element numbers (0, 1, ... in the IR's order of ``x``: NHWC for a 4-D tensor) -- PyTorch's own semantics,
negative and repeated indices included -- and emits ``x`` viewed as ``[1, K, C]``, a constant ``[1, W]``
index, GATHER and a RESHAPE to the output, with C the longest run of consecutive elements the map keeps
together (a whole row of ``index_select`` along dim 1 is one C-element copy).  A map that is the identity is
one RESHAPE.  :func:`moved` is shared with the scatters (:mod:`.scatter`), whose map reads two inputs.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch.fx.node import map_arg

from ...errors import LoweringError
from ...fx import canonical_op, node_source
from ...ir import Op

ATEN = ["aten.gather", "aten.index", "aten.index_select", "aten.as_strided", "aten.unfold"]


def lower(ctx, node) -> None:
    moved(ctx, node, [0])


def unsupported(node) -> str | None:
    """Why these indices cannot be lowered (judged before calibration), or None: they must be constants."""
    return computed_indices(node, [0])


def computed_indices(node, data: list[int]) -> str | None:
    """"with indices the model computes ..." when an argument of ``node`` other than the data inputs at
    positions ``data`` is a value the model computes (not a constant), else None."""
    for i, a in enumerate(node.args):
        if i in data:
            continue
        found = []
        map_arg(a, lambda n: found.append(n) or n)
        if any(n.op != "get_attr" for n in found):
            return "with indices the model computes (constant indices only: GATHER of a constant index map)"
    return None


def _ids(t, start: int) -> torch.Tensor:
    """The element numbers ``start, start + 1, ...`` of IR tensor ``t``, numbered in the IR's order (NHWC for
    a 4-D tensor), as a float64 tensor in PyTorch's layout (NCHW)."""
    ids = torch.arange(start, start + t.numel, dtype=torch.float64).reshape(tuple(t.shape))
    return ids.permute(0, 3, 1, 2) if len(t.shape) == 4 else ids


def index_map(ctx, node, data: list, xs: list) -> np.ndarray:
    """The flat IR position (in the concatenation of ``xs``, the IR tensors of the data inputs at positions
    ``data`` of ``node.args``, each flattened in the IR's order) of every element of ``node``'s output, in the
    IR's order of the output: ``node``'s own op called on the element numbers, its other tensor arguments
    (the constant indices) as they are."""
    starts, total = {}, 0
    for i, t in zip(data, xs):
        starts[i] = total
        total += t.numel
    ids = {i: _ids(t, starts[i]) for i, t in zip(data, xs)}
    args = [ids[i] if i in data else map_arg(a, ctx._attr) for i, a in enumerate(node.args)]
    kwargs = map_arg(dict(node.kwargs), ctx._attr)
    with torch.no_grad():
        y = node.target(*args, **kwargs)
    if y.dim() == 4:
        y = y.permute(0, 2, 3, 1)
    return y.contiguous().reshape(-1).to(torch.int64).numpy()


def run_length(idx: np.ndarray, k_total: int) -> int:
    """The largest C dividing ``k_total`` and ``len(idx)`` such that ``idx`` is rows of C consecutive positions,
    each starting at a multiple of C (so the values are ``[k_total / C, C]`` rows and the map one index a row)."""
    g = math.gcd(k_total, idx.size)
    for c in sorted((d for d in range(1, g + 1) if g % d == 0), reverse=True):
        rows = idx.reshape(-1, c)
        if (rows[:, 0] % c == 0).all() and (rows == rows[:, :1] + np.arange(c)).all():
            return c
    return 1


def moved(ctx, node, data: list[int]) -> None:
    """Lower ``node``, an op that only moves the elements of its data inputs (positions ``data`` of
    ``node.args``, every one on the output's grid), as GATHER of a constant index map (:func:`index_map`);
    several data inputs are flattened and CONCATenated first.

    Raises:
        LoweringError: a data input on another grid than the output (the quantizer gives them one).
    """
    src = node_source(node)
    out = ctx.output(node)
    xs = [ctx.input(node.args[i], node) for i in data]
    for t in xs:
        if (t.dtype, t.scale, t.zero_point) != (out.dtype, out.scale, out.zero_point):
            raise LoweringError(f"{src}: {canonical_op(node.target)} input {t.name} is not on its output's grid "
                                f"({t.scale}, {t.zero_point}) vs ({out.scale}, {out.zero_point}); quantize with "
                                "tabula.quantize")
    idx = index_map(ctx, node, data, xs)
    k_total = sum(t.numel for t in xs)
    if len(xs) == 1 and idx.size == k_total and (idx == np.arange(k_total)).all():
        ctx.graph.add_op(Op("RESHAPE", [xs[0].name], [out.name], {"shape": list(out.shape)}, src))
        return
    if len(xs) == 1:
        flat = xs[0]
    else:
        parts = []
        for t in xs:
            p = ctx.temp(f"{node.name}_{t.name}_flat", (t.numel,), t.dtype, t.scale, t.zero_point)
            ctx.graph.add_op(Op("RESHAPE", [t.name], [p.name], {"shape": [t.numel]}, src))
            parts.append(p.name)
        flat = ctx.temp(f"{node.name}_joined", (k_total,), out.dtype, out.scale, out.zero_point)
        ctx.graph.add_op(Op("CONCAT", parts, [flat.name], {"axis": 0}, src))
    c = run_length(idx, k_total)
    values = ctx.temp(f"{node.name}_rows", (1, k_total // c, c), out.dtype, out.scale, out.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [flat.name], [values.name], {"shape": list(values.shape)}, src))
    index = ctx.const(f"{node.name}_index", (idx.reshape(-1, c)[:, 0] // c).reshape(1, -1), "int32")
    picked = ctx.temp(f"{node.name}_gathered", (1, idx.size // c, c), out.dtype, out.scale, out.zero_point)
    ctx.graph.add_op(Op("GATHER", [values.name, index.name], [picked.name], {}, src))
    ctx.graph.add_op(Op("RESHAPE", [picked.name], [out.name], {"shape": list(out.shape)}, src))

