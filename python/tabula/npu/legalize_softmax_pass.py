"""IR pass for NPU targets: every softmax sequence in the CPU form (REDUCE_MAX on int32, TILE, INTDIV) is
replaced by its NPU form (:func:`tabula.lowering.ops.softmax.emit_softmax_npu`, :mod:`tabula.qmath.softmax_npu`):
REDUCE_MAX on the int8 / int16 input, the row broadcast, int8 exps from int8 TABLEs, a Newton-Raphson
reciprocal instead of INTDIV.  The exps and the row sum are the CPU form's to the bit; the output may differ
from the CPU form's at rounding ties (both stay within their proven bounds: ``attrs["softmax"]`` of the
sequence's first op records the NPU form's).

A sequence is found by the ``attrs["softmax"]`` its first op carries (``input``, ``output``, ``axis``,
``row_len``, ``roles``: one per op, in order, contiguous).  One whose plan cannot be built in the NPU form
(a row so long that the reciprocal does not converge within :data:`tabula.qmath.softmax_npu.NPU_MAX_STEPS`
steps) keeps its CPU form; :func:`legalize_softmax` returns why, and the partitioner then puts its INTDIV
on the CPU.
"""
from __future__ import annotations

from ..errors import QuantizationError
from ..ir import Graph

__all__ = ["legalize_softmax", "softmax_forms"]


def _sequence(g: Graph, i: int) -> tuple[int, int] | None:
    """``(first, end)`` op indices of the CPU-form softmax sequence starting at op ``i``, or None."""
    meta = g.ops[i].attrs.get("softmax")
    if not isinstance(meta, dict) or meta.get("form") == "npu":
        return None
    end = i + len(meta.get("roles", []))
    if end > len(g.ops) or g.ops[end - 1].outputs != [meta.get("output")]:
        return None
    if any(o.source != g.ops[i].source for o in g.ops[i:end]):
        return None
    return i, end


def legalize_softmax(g: Graph) -> tuple[Graph, list[str]]:
    """A copy of ``g`` with every CPU-form softmax in its NPU form; and one line per softmax kept in the
    CPU form (why).  ``g`` is not modified; the result is verified (:func:`tabula.ir.verify`)."""
    from ..ir import verify
    from ..lowering.ops.softmax import emit_softmax_npu
    from ..lowering.pipeline import LoweringContext
    from ..qmath.softmax_npu import build_softmax_npu_plan

    kept: list[str] = []
    out = Graph(tensors=dict(g.tensors), ops=list(g.ops), inputs=list(g.inputs), outputs=list(g.outputs),
                constants=dict(g.constants), io_layout=dict(g.io_layout))
    i = 0
    while i < len(out.ops):
        span = _sequence(out, i)
        if span is None:
            i += 1
            continue
        first, end = span
        meta = out.ops[first].attrs["softmax"]
        x, y = out.tensors[meta["input"]], out.tensors[meta["output"]]
        if meta.get("masked"):
            kept.append(f"{out.ops[first].source or meta['output']}: softmax keeps its CPU form (an attention mask: "
                        "the NPU form has no masked rows)")
            i = end
            continue
        try:
            plan = build_softmax_npu_plan(float(meta.get("input_scale", x.scale)), x.dtype, int(meta["row_len"]),
                                          float(y.scale), int(y.zero_point))
        except QuantizationError as e:
            kept.append(f"{out.ops[first].source or meta['output']}: softmax keeps its CPU form ({e})")
            i = end
            continue
        old = out.ops[first:end]
        rest = out.ops[end:]
        out.ops = out.ops[:first]
        still_read = {n for o in out.ops + rest for n in o.inputs} | set(out.outputs)
        for n in {n for o in old for n in o.inputs + o.outputs} - still_read - {x.name, y.name}:
            out.tensors.pop(n, None)
            out.constants.pop(n, None)
        first_internal = str(meta["internal"][0]) if meta.get("internal") else ""
        base = first_internal[: -len("_x32")] if first_internal.endswith("_x32") else y.name
        emit_softmax_npu(LoweringContext(None, out), base, x, y, int(meta["axis"]), plan, old[0].source)
        new = out.ops[first:]
        out.ops = out.ops[:first] + new + rest
        i = first + len(new)
    verify(out)
    return out, kept


def softmax_forms(g: Graph) -> list[dict]:
    """Every softmax of ``g``: ``{"output", "form", "row_len", "error_bound_lsb", "source"}``."""
    return [{"output": o.attrs["softmax"]["output"], "form": o.attrs["softmax"].get("form"),
             "row_len": o.attrs["softmax"].get("row_len"), "error_bound_lsb": o.attrs["softmax"].get("error_bound_lsb"),
             "source": o.source} for o in g.ops if isinstance(o.attrs.get("softmax"), dict)]

