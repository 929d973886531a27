"""Remove identity-like ops and export's metadata asserts from a captured FX graph, before
quantization (:data:`tabula.rules.IDENTITY`, :data:`tabula.rules.ASSERTS`).

``clone`` / ``contiguous`` / ``detach`` / ``alias`` / ``lift_fresh_copy`` / ``dropout`` (the model runs
for inference) and ``_to_copy`` / ``to`` to the dtype the value already has return their input's value;
every use of such a node reads the input instead, so the quantizer never sees them: they share their
producer's grid and cost nothing on the device.  A conversion to another dtype stays (and is listed
as unsupported by :func:`tabula.quantizer.annotator.check_supported`).
"""
from __future__ import annotations

from torch.fx import GraphModule

from .. import rules


def remove_identities(gm: GraphModule) -> int:
    """Rewire the users of every identity op to its input and erase it, erase every assert; returns
    how many nodes went.  ``gm`` is changed in place (and recompiled when anything changed)."""
    removed = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function":
            continue
        name = rules.canonical_op(n.target)
        if name in rules.ASSERTS and not n.users:
            gm.graph.erase_node(n)
            removed += 1
        elif rules.is_identity(n):
            n.replace_all_uses_with(n.args[0])
            gm.graph.erase_node(n)
            removed += 1
    if removed:
        gm.graph.lint()
        gm.recompile()
    return removed
