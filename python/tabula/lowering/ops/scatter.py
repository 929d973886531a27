"""Writes at constant indices -> GATHER of a constant index map over ``x`` and the written values (TOSA 1.0
GATHER; :func:`.gather.moved`), on one grid (``rules.JOINING_ARGS``: ``x``, the values and the output share
the grid observed over them, so a constant value outside ``x``'s range is still representable -- PT2E
quantizes it onto that grid, saturating at its ends).

``index_put(x, indices, values)`` (``x[i, j] = v``; ``accumulate=False``), ``index_copy(x, dim, index,
source)``, ``select_scatter(x, src, dim, index)`` and ``slice_scatter(x, src, dim, start, end, step)`` each
give an output whose every element is one element of ``x`` or of the values: the map is found by calling
the op on the element numbers of both (repeated indices keep the element PyTorch keeps).  The values may
be constants or activations; the indices must be constants."""
from __future__ import annotations

from ... import rules
from ...fx import arg, canonical_op
from .gather import computed_indices, moved

ATEN = ["aten.index_put", "aten.index_copy", "aten.select_scatter", "aten.slice_scatter"]


def lower(ctx, node) -> None:
    moved(ctx, node, list(rules.JOINING_ARGS[canonical_op(node.target)]))


def unsupported(node) -> str | None:
    """Why this write cannot be lowered (before calibration), or None: accumulating ``index_put`` adds
    (not a move of codes), and the indices must be constants."""
    if canonical_op(node.target) == "aten.index_put" and bool(arg(node, 3, "accumulate", False)):
        return "with accumulate=True (a sum, not a write)"
    return computed_indices(node, list(rules.JOINING_ARGS[canonical_op(node.target)]))
