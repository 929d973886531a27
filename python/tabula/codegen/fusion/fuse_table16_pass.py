"""Codegen fusion ``TABLE16``: an int16 table op's sequence as :func:`tabula.lowering.ops.table.emit_int16` emits it
(TABLE, RESCALE x 2^-7; or shift TABLEs and zoom RESCALEs, TABLEs, CLAMPs, RESCALEs, ADD/SUBs, MUL --
:class:`tabula.qmath.Table16Plan`) becomes one ``tabula_table16_s16`` call: its int32 intermediates get
no arena space, its shift tables no flash (the kernel computes ``(x - centre) * 2^zoom`` directly) and
the element loop runs once.  The emitter names the group's intermediates in its first op's
``attrs["internal"]``."""
from __future__ import annotations

from ...ir import Graph, Op
from ._graph import consumers_of, fused_group

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {}


FUSED_TABLE16 = "TABLE16"


def fuse_table16(g: Graph) -> Graph:
    """A copy of ``g`` in which every fusable int16 table op is one ``TABLE16`` op
    (inputs ``[x, hi0, lo0?, hi1, ...]``, output the op's int16 result; ``attrs``: ``terms``
    ``[{"zoom", "centre", "hi", "lo"}]``, ``ramps``, ``product``, ``frac_bits`` and ``wide``), placed where
    its last op was.  A group is left as it is when one of its intermediates is read outside it or is a
    graph output.  Constants no op reads any more (the shift tables) are dropped.  ``g`` is not modified."""
    consumers = consumers_of(g)
    replace: dict[int, Op] = {}  # index of the group's last op -> fused op
    drop: set[int] = set()
    removed: set[str] = set()
    for op in g.ops:
        a = op.attrs
        if "internal" not in a or "output" not in a:
            continue
        internal, out = set(a["internal"]), a["output"]
        group = fused_group(g, consumers, internal, out)
        if group is None:
            continue
        terms = a["terms"] if "terms" in a else [{"zoom": 0, "centre": 0, "hi": op.inputs[1], "lo": None}]
        consts = [n for t in terms for n in (t["hi"], t.get("lo")) if n is not None]
        x = a.get("input", op.inputs[0])
        wide = "frac_bits" in a
        attrs = {"terms": [dict(zoom=int(t["zoom"]), centre=int(t.get("centre", 0)), hi=t["hi"], lo=t.get("lo"))
                           for t in terms],
                 "ramps": [dict(r) for r in a.get("ramps") or ()], "product": a.get("product"),
                 "frac_bits": int(a.get("frac_bits", 7)), "wide": wide, "function": a.get("function"),
                 "final": a.get("final")}
        replace[group[-1]] = Op(FUSED_TABLE16, [x] + consts, [out], attrs, op.source)
        drop.update(group[:-1])
        removed |= internal
    if not replace:
        return g
    ops = [replace[i] if i in replace else op for i, op in enumerate(g.ops) if i in replace or i not in drop]
    read = {n for op in ops for n in op.inputs}
    f = Graph()
    for name, t in g.tensors.items():
        if name in removed or (name in g.constants and name not in read):
            continue
        f.add_tensor(t, g.constants.get(name))
    for op in ops:
        f.add_op(op)
    f.inputs, f.outputs, f.io_layout = list(g.inputs), list(g.outputs), dict(g.io_layout)
    return f
