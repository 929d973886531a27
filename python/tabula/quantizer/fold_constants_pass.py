"""Fold every subgraph of a captured FX graph that depends on constants only (parameters, buffers,
tensors the model creates) into one constant, before quantization.

``self.scale.view(1, -1, 1, 1)``, ``self.table.expand(1, 3, 8, 8)``, ``torch.ones(4) * 2`` or
``torch.sigmoid(self.gate)`` run once here, in float32 as PyTorch computes them, and become a
``get_attr`` buffer; the quantizer and the lowering then see a constant operand (quantized into the
op that reads it) instead of ops that would run on the device every inference.  Random ops
(``nondeterministic_seeded``) are never folded.  Weights that feed conv2d / linear directly are
``get_attr`` nodes already and stay as they are.
"""
from __future__ import annotations

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg


def _value(gm: GraphModule, n: Node):
    obj = gm
    for part in str(n.target).split("."):
        obj = getattr(obj, part)
    return obj


def fold_constants(gm: GraphModule) -> int:
    """Replace each constant-only ``call_function`` node that a non-constant node (or the output)
    reads by a ``get_attr`` of its value (a buffer ``_tabula_const<i>`` of ``gm``); dead nodes are
    removed.  Returns how many nodes were replaced.  ``gm`` is changed in place."""
    values: dict[Node, object] = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            v = _value(gm, n)
            if isinstance(v, torch.Tensor):
                values[n] = v.detach()
        elif n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload):
            if torch.Tag.nondeterministic_seeded in n.target.tags:
                continue
            inputs = n.all_input_nodes
            if not all(i in values for i in inputs):
                continue
            if not inputs and not n.target._schema.returns:  # nothing to compute
                continue
            args = map_arg(n.args, lambda a: values[a])
            kwargs = map_arg(n.kwargs, lambda a: values[a])
            with torch.no_grad():
                out = n.target(*args, **kwargs)
            if isinstance(out, torch.Tensor):
                values[n] = out.detach()
    folded = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n not in values:
            continue
        if all(u in values for u in n.users):
            continue  # read by other constants only: folded with them (or dead)
        i = 0
        while hasattr(gm, f"_tabula_const{i}"):
            i += 1
        name = f"_tabula_const{i}"
        gm.register_buffer(name, values[n].clone().contiguous())
        with gm.graph.inserting_before(n):
            c = gm.graph.get_attr(name)
        c.meta.update(n.meta)
        n.replace_all_uses_with(c)
        folded += 1
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return folded
