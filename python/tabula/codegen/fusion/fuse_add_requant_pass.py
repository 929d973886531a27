"""Codegen fusion ``ADD_REQUANT``: an ADD / SUB of two activations as the lowering emits it (RESCALE each to
int32, ADD / SUB, RESCALE back [, CLAMP]) becomes one ``tabula_add_requant_<t>`` call (``tabula_add_requant_<ta>_<tb>_<to>``
when the inputs and the output do not all have one type, as scheme=mixed makes them): the residual
additions of a ResNet keep no int32 tensor in the arena and pass over the data once."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...ir import Graph, Op, Tensor
from ._graph import consumers_of, fold_clamp, only_reader, rebuild

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {
    "fuse_rescale_clamp": "fuse_rescale_clamp would fold the CLAMP after an ADD's final RESCALE into it; this pass then "
                          "leaves the sequence alone (a RESCALE with clamp bounds) and the int32 sum stays in the arena",
}


FUSED_ADD_REQUANT = "ADD_REQUANT"

#: The types a, b and the output may each have (any combination: a kernel per triple).
ACTIVATION_TYPES = ("int8", "int16")


def fuse_add_requant(g: Graph) -> Graph:
    """A copy of ``g`` in which every ADD / SUB of two activations as the lowering emits it --
    ``RESCALE a -> int32``, ``RESCALE b -> int32`` (per-tensor, scale32, output zero point 0; each
    read only by the ADD / SUB), the ADD / SUB of equal shapes (no broadcast), its only reader a
    per-tensor ``RESCALE`` back to int8 or int16 (input zero point 0; a, b and the output each int8 or
    int16, mixed allowed), and
    optionally that RESCALE's only reader, a CLAMP -- is one ``ADD_REQUANT`` op: inputs
    ``[a, b, params]``, output the RESCALE's (or CLAMP's) tensor, placed where the ADD / SUB was.
    ``params`` is a new int32 constant ``{a_zp, a_m, a_s, b_zp, b_m, b_s, subtract, output_zp,
    out_min, out_max, m, s}`` (``[out_min, out_max]``: the type's range narrowed to the CLAMP's
    bounds): what ``tabula_add_requant_<t>`` (``_<ta>_<tb>_<to>``) computes from it equals the sequence
    bit for bit.
    An intermediate that is a graph output or has another reader keeps the sequence as it is.
    ``g`` is not modified."""
    consumers = consumers_of(g)
    producer = {n: i for i, op in enumerate(g.ops) for n in op.outputs}

    def per_tensor(r: Op) -> tuple[int, int] | None:
        a = r.attrs
        if len(a["multiplier"]) != 1 or not bool(a.get("scale32", True)):
            return None
        return int(a["multiplier"][0]), int(a["shift"][0])

    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for i, op in enumerate(g.ops):
        if op.op not in ("ADD", "SUB") or len(op.inputs) != 2 or op.inputs[0] == op.inputs[1]:
            continue
        acc = op.outputs[0]
        if g.tensors[acc].dtype != "int32" or any(g.tensors[n].shape != g.tensors[acc].shape for n in op.inputs):
            continue
        terms = []
        for n in op.inputs:
            p = producer.get(n)
            r = g.ops[p] if p is not None else None
            if (r is None or r.op != "RESCALE" or n in g.outputs or consumers.get(n) != [i]
                    or int(r.attrs.get("output_zp", 0)) != 0 or per_tensor(r) is None):
                break
            terms.append((p, r))
        if len(terms) != 2:
            continue
        if any(g.tensors[rt.inputs[0]].dtype not in ACTIVATION_TYPES for _, rt in terms):
            continue
        j = only_reader(g, consumers, acc, "RESCALE")
        if j is None:
            continue
        r = g.ops[j]
        out = r.outputs[0]
        t = g.tensors[out].dtype
        if (t not in ACTIVATION_TYPES or int(r.attrs.get("input_zp", 0)) != 0 or per_tensor(r) is None
                or "clamp" in r.attrs):
            continue
        lo, hi = dtypes.range_of(t)
        group, internal = [terms[0][0], terms[1][0], j], {*op.inputs, acc}
        out, lo, hi = fold_clamp(g, consumers, out, lo, hi, group, internal)
        params = []
        for _, rt in terms:
            params += [int(rt.attrs.get("input_zp", 0)), *per_tensor(rt)]
        params += [int(op.op == "SUB"), int(r.attrs.get("output_zp", 0)), lo, hi, *per_tensor(r)]
        name = f"{out}__add_requant"
        added[name] = (Tensor(name, (len(params),), "int32"), np.array(params, np.int64))
        replace[i] = Op(FUSED_ADD_REQUANT, [terms[0][1].inputs[0], terms[1][1].inputs[0], name], [out], {}, op.source)
        drop.update(group)
        removed |= internal
    if not replace:
        return g
    return rebuild(g, replace, drop, removed, added)
