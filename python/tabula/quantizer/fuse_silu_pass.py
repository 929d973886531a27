"""``x * sigmoid(x)`` -> ``silu(x)`` on a captured FX graph, before quantization.

SiLU is ``x * sigmoid(x)`` by definition (PyTorch's ``torch.nn.SiLU`` documentation); ONNX below opset 22
and TFLite have no SiLU operator, so a model that went through them (onnx2torch, a hand-written
``x * torch.sigmoid(x)``) arrives as a ``sigmoid`` and a ``mul`` of two activations: two grids, two
roundings and a MUL on the device where one TABLE gives the exactly rounded ``q(silu(dq(c)))`` of every
input code.  This pass rewrites the pair (either operand order) when the ``sigmoid``'s only user is that
``mul``, so the model quantizes as it does when written with ``nn.SiLU``.
"""
from __future__ import annotations

import torch
from torch.fx import GraphModule

from ..fx import canonical_op, replace_with_call

__all__ = ["fuse_silu"]


def fuse_silu(gm: GraphModule) -> int:
    """Replace every ``mul(x, sigmoid(x))`` / ``mul(sigmoid(x), x)`` whose sigmoid has no other user by
    ``silu(x)``; returns how many.  ``gm`` is changed in place (recompiled when anything changed)."""
    fused = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or canonical_op(n.target) != "aten.mul" or len(n.args) != 2 or n.kwargs:
            continue
        for s, x in (n.args, n.args[::-1]):
            if (isinstance(s, torch.fx.Node) and s.op == "call_function" and canonical_op(s.target) == "aten.sigmoid"
                    and len(s.args) == 1 and s.args[0] is x and len(s.users) == 1):
                replace_with_call(gm.graph, n, torch.ops.aten.silu.default, (x,))
                gm.graph.erase_node(s)
                fused += 1
                break
    if fused:
        gm.graph.lint()
        gm.recompile()
    return fused
