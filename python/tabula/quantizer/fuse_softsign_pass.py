"""``x / (abs(x) + 1)`` -> ``tabula.softsign(x)`` on a captured FX graph, before quantization.

PyTorch has no softsign operator: ``F.softsign`` / ``nn.Softsign`` compute ``input / (input.abs() + 1)``
(PyTorch's ``torch.nn.functional.softsign``), so ``torch.export`` gives an ``abs``, an ``add`` of 1 and a
``div`` by an activation -- three grids, three roundings, and a division the rules refuse.  softsign is a
function of one activation: this pass rewrites the three (``abs(x) + 1`` or ``1 + abs(x)``, when ``abs`` and
``add`` have no other user) into one ``tabula.softsign(x)`` node, a table op of ``rules.TABLE``: int8 one
TABLE, ``q(softsign(dq(c)))`` on every code; int16 a table plan within 1 LSB (``tests/qmath``).
"""
from __future__ import annotations

import numbers

import torch
from torch.fx import GraphModule, Node

from ..fx import canonical_op, replace_with_call

__all__ = ["fuse_softsign", "softsign"]


@torch.library.custom_op("tabula::softsign", mutates_args=())
def softsign(x: torch.Tensor) -> torch.Tensor:
    """``x / (|x| + 1)`` elementwise (PyTorch's ``F.softsign``): float32 in, float32 out, ``x``'s shape."""
    return x / (x.abs() + 1)


@softsign.register_fake
def _(x):
    return torch.empty_like(x)


def _call(n, name: str) -> bool:
    return isinstance(n, Node) and n.op == "call_function" and canonical_op(n.target) == name


def _abs_plus_one(d: Node, x: Node) -> bool:
    """``d`` is ``add(abs(x), 1)`` or ``add(1, abs(x))`` (alpha 1), ``d`` and the abs read only here."""
    if not _call(d, "aten.add") or len(d.users) != 1 or d.kwargs.get("alpha", 1) != 1 or len(d.args) != 2:
        return False
    for a, one in (d.args, d.args[::-1]):
        if (_call(a, "aten.abs") and a.args[0] is x and len(a.users) == 1 and isinstance(one, numbers.Number)
                and float(one) == 1.0):
            return True
    return False


def fuse_softsign(gm: GraphModule) -> int:
    """Replace every ``div(x, abs(x) + 1)`` (no rounding mode) by ``tabula.softsign(x)``; returns how many.
    ``gm`` is changed in place (recompiled when anything changed)."""
    fused = 0
    for n in list(gm.graph.nodes):
        if not _call(n, "aten.div") or len(n.args) != 2 or n.kwargs.get("rounding_mode") is not None:
            continue
        x, d = n.args
        if not isinstance(x, Node) or not _abs_plus_one(d, x):
            continue
        a = next(v for v in d.args if isinstance(v, Node))
        replace_with_call(gm.graph, n, torch.ops.tabula.softsign.default, (x,))
        gm.graph.erase_node(d)
        gm.graph.erase_node(a)
        fused += 1
    if fused:
        gm.graph.lint()
        gm.recompile()
    return fused
