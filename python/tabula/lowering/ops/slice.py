"""aten.slice (step 1) and aten.narrow (``narrow(x, dim, start, length)`` is ``slice(x, dim, start,
start + length)``) -> SLICE (input and output share qparams), the dim mapped to the NHWC axis."""
from __future__ import annotations

from ... import rules
from ...errors import LoweringError
from ...fx import arg, node_source
from ...ir import Op
from ._common import device_axis

ATEN = ["aten.slice", "aten.narrow"]


def lower(ctx, node) -> None:
    src = node_source(node)
    x, out = ctx.shared(node)
    if rules.canonical_op(node.target) == "aten.slice" and int(arg(node, 4, "step", 1)) != 1:
        raise LoweringError(f"{src}: slice with a step other than 1 is not supported")
    rank = len(x.shape)
    dim = int(arg(node, 1, "dim", 0)) % rank
    ax = device_axis(dim, rank)
    n = x.shape[ax]
    if rules.canonical_op(node.target) == "aten.narrow":
        start = int(node.args[2])
        start = start + n if start < 0 else start
        end = start + int(node.args[3])
    else:
        start, end = arg(node, 2, "start", None), arg(node, 3, "end", None)
    start = 0 if start is None else int(start)
    end = n if end is None else int(end)
    start, end = (start + n if start < 0 else start), (end + n if end < 0 else end)
    start, end = max(0, min(start, n)), max(0, min(end, n))
    starts = [0] * rank
    sizes = list(x.shape)
    starts[ax], sizes[ax] = start, max(0, end - start)
    if tuple(sizes) != out.shape:
        raise LoweringError(f"{src}: slice gives {sizes}, PyTorch says {out.shape}")
    ctx.graph.add_op(Op("SLICE", [x.name], [out.name], {"start": starts, "size": sizes}, src))


def unsupported(node) -> str | None:
    """The uses :func:`lower` refuses, judged on the float graph before calibration."""
    step = int(arg(node, 4, "step", 1)) if rules.canonical_op(node.target) == "aten.slice" else 1
    return f"with step {step} (only 1)" if step != 1 else None
