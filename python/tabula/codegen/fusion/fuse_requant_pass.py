"""Codegen fusion of requantization into the accumulator kernels: a CONV2D / DEPTHWISE_CONV2D /
FULLY_CONNECTED whose accumulator's only reader is a RESCALE to the input's own type (int32 -> int8,
int48 -> int16), and the CLAMP of a fused activation when it is that RESCALE's only reader, becomes one
accumulator op that requantizes in its epilogue (the kernels' ``requant`` block): no int32 / int48
tensor in the arena."""
from __future__ import annotations

import numpy as np

from ... import dtypes, requant
from ...ir import Graph, Op, Tensor
from ._graph import consumers_of, fold_clamp, only_reader, rebuild

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {
    "fold_input_zp": "fold_input_zp names the folded bias after its op's output, which fuse_requant makes the "
                     "requantized tensor; the other order gives the same numbers under other constant names in model.c",
    "fuse_rescale_clamp": "fuse_rescale_clamp would fold the CLAMP after an accumulator's RESCALE into that RESCALE; "
                          "fuse_requant then leaves it alone (a RESCALE with clamp bounds), and the accumulator "
                          "tensor would stay in the arena",
}


#: Accumulator ops whose kernels take a ``requant`` block: input dtype -> (accumulator dtype, output
#: dtype, RESCALE's scale32).
_REQUANT_OPS = ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED")
_REQUANT_TYPES = {"int8": ("int32", "int8", True), "int16": ("int48", "int16", False)}


def fuse_requant(g: Graph) -> Graph:
    """A copy of ``g`` in which every CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED followed by its accumulator's only reader,
    a RESCALE (input zero point 0, to int8 from int32 or to int16 from int48), and optionally by that
    RESCALE's only reader, a CLAMP, is one op of the accumulator's kind: inputs ``[x, w, b, requant]``,
    output the RESCALE's (or the CLAMP's) tensor, ``attrs["requant"] = True``, placed where the
    accumulator op was.  ``requant`` is a new int32 constant, the ``tabula_requant`` block
    :func:`tabula.requant.pack` lays out (a per-tensor RESCALE's multiplier repeated per channel;
    [out_min, out_max] the output dtype's range, narrowed to the CLAMP's bounds): what ``tabula_conv2d_<t>`` / ``tabula_fully_connected_<t>``
    / ``tabula_depthwise_conv2d_<t>`` compute from it equals the op sequence bit for bit.  Intermediates that are graph outputs, or have
    other readers, keep the sequence as it is.  ``g`` is not modified."""
    consumers = consumers_of(g)

    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for i, op in enumerate(g.ops):
        if op.op not in _REQUANT_OPS or len(op.inputs) != 3 or op.attrs.get("requant"):
            continue
        acc = op.outputs[0]
        j = only_reader(g, consumers, acc, "RESCALE")
        want = _REQUANT_TYPES.get(g.tensors[op.inputs[0]].dtype)
        if j is None or want is None:
            continue
        r = g.ops[j]
        out = r.outputs[0]
        if ("clamp" in r.attrs or g.tensors[acc].dtype != want[0] or g.tensors[out].dtype != want[1]
                or bool(r.attrs.get("scale32", True)) != want[2] or int(r.attrs.get("input_zp", 0)) != 0):
            continue
        out_c = g.tensors[acc].shape[-1]
        m, sh = [int(v) for v in r.attrs["multiplier"]], [int(v) for v in r.attrs["shift"]]
        if len(m) == 1:
            m, sh = m * out_c, sh * out_c
        if len(m) != out_c:
            continue
        lo, hi = dtypes.range_of(want[1])
        group, internal = [j], {acc}
        out, lo, hi = fold_clamp(g, consumers, out, lo, hi, group, internal)
        block = requant.pack(int(r.attrs.get("output_zp", 0)), lo, hi, m, sh).astype(np.int64)
        name = f"{out}__requant"
        added[name] = (Tensor(name, (block.size,), "int32"), block)
        replace[i] = Op(op.op, [*op.inputs, name], [out], {**op.attrs, "requant": True}, op.source)
        drop.update(group)
        removed |= internal
    if not replace:
        return g
    return rebuild(g, replace, drop, removed, added)
