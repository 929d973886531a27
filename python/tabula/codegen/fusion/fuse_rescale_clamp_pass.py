"""Codegen fusion of a CLAMP into the RESCALE before it: at a precision boundary of ``scheme=mixed`` the
accumulator op cannot requantize in its epilogue (int32 -> int16, int48 -> int8), so its RESCALE runs as
its own kernel; a fused activation's CLAMP after it (int16 ReLU: [0, 32767]) then becomes that kernel's
output bounds (``tabula_rescale_clamp_<in>_<out>``) instead of one more pass over the tensor."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...ir import Graph, Op
from ...reference.ops import clamp as clamp_ref
from ...reference.ops import rescale as rescale_ref
from ._graph import consumers_of, fold_clamp, rebuild

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {}

#: (input dtype, output dtype) of the RESCALEs with a clamping kernel (tabula_rescale_clamp_<in>_<out>).
CLAMPING = {("int32", "int8"), ("int32", "int16"), ("int48", "int8"), ("int48", "int16")}


def fuse_rescale_clamp(g: Graph) -> Graph:
    """A copy of ``g`` in which every RESCALE from int32 / int48 to int8 / int16 whose output's only reader
    is a CLAMP (and is no graph output) is one RESCALE op: the RESCALE's input and attributes plus
    ``attrs["clamp"] = [lo, hi]`` (the output type's range narrowed to the CLAMP's bounds), output the
    CLAMP's tensor, placed where the RESCALE was.  What ``tabula_rescale_clamp_<in>_<out>`` computes from
    it equals RESCALE then CLAMP bit for bit (:func:`run_fused` is that pair's reference).  A RESCALE
    already fused into an accumulator op or an ADD_REQUANT is no longer in the graph: those passes run
    first (their MUST_RUN_BEFORE).  ``g`` is not modified."""
    consumers = consumers_of(g)
    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    for i, op in enumerate(g.ops):
        if op.op != "RESCALE" or "clamp" in op.attrs:
            continue
        src, out = g.tensors[op.inputs[0]].dtype, g.tensors[op.outputs[0]].dtype
        if (src, out) not in CLAMPING:
            continue
        lo, hi = dtypes.range_of(out)
        group: list[int] = []
        internal: set[str] = set()
        y, lo, hi = fold_clamp(g, consumers, op.outputs[0], lo, hi, group, internal)
        if not group or lo > hi:
            continue
        replace[i] = Op("RESCALE", list(op.inputs), [y], {**op.attrs, "clamp": [int(lo), int(hi)]}, op.source)
        drop.update(group)
        removed |= internal
    if not replace:
        return g
    return rebuild(g, replace, drop, removed, {})


def run_fused(op: Op, x: np.ndarray, output_dtype: str) -> np.ndarray:
    """The reference of a fused RESCALE (``attrs["clamp"] = [lo, hi]``): TOSA RESCALE
    (:mod:`tabula.reference.ops.rescale`) to ``output_dtype`` then CLAMP to [lo, hi]
    (:mod:`tabula.reference.ops.clamp`), the two IR ops it replaces.  ``x``: the RESCALE's input (int32,
    or int48 held in int64); returns ``output_dtype`` (int8 / int16), ``x``'s shape."""
    attrs = {k: v for k, v in op.attrs.items() if k != "clamp"}
    y = rescale_ref.run([x], {**attrs, "output_dtype": output_dtype})
    lo, hi = op.attrs["clamp"]
    return clamp_ref.run([y], {"min": lo, "max": hi})
