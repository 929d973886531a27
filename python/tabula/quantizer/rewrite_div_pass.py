"""``x / y`` by an activation ``y`` that is positive by construction -> ``x * reciprocal(y)``, before
quantization (after constant folding, so a divisor computed from constants stays a division by a constant).

The reciprocal is a domain-limited table (``rules.DOMAIN``: ``[0, inf)``, its pole at 0 saturating), so the
rewrite is made only where ``y > 0`` (or ``>= 0``) follows from the graph (:func:`positive`): exp, sigmoid,
softplus, sqrt, abs, relu / relu6, a clamp with a lower bound >= 0, ``y * y``, sums / means / maxima of such,
and adds / muls of such with constants >= 0 (``x / (x.abs() + 1)``, ``e / e.sum(-1, keepdim=True)``,
``x / (x * x + 1).sqrt()``).  Any other divisor stays a division by an activation, refused up front (a
negative ``y`` would be clipped to the reciprocal's domain).

The reciprocal's output grid is observed (calibrated on the quotients' divisors), not the exact image of
its input grid (which reaches 0, the pole): a divisor smaller than any calibrated one saturates.

Error (against ``dq(x) / dq(y)``): the reciprocal's one rounding on its own grid ``s_r`` (int8 exact,
``s_r / 2``; int16 table plans within ``s_r``), times ``|x|``, and the MUL's rounding::

    |err| <= 1/2 + max|x| * s_r / (2 s_out)  output LSB   (int16: max|x| * s_r / s_out)

(``tests/models/test_long_tail_data.py`` measures it.)
"""
from __future__ import annotations

import numbers

import torch
from torch.fx import GraphModule, Node

from ..fx import arg, canonical_op

__all__ = ["rewrite_div", "positive"]

aten = torch.ops.aten

_POSITIVE = {"aten.exp", "aten.sigmoid", "aten.softplus", "aten.sqrt", "aten.abs", "aten.relu", "aten.relu6",
             "aten.cosh", "aten.reciprocal", "aten.rsqrt"}
_OF_POSITIVE = {"aten.sum", "aten.mean", "aten.amax", "aten.amin", "aten.expand", "aten.view", "aten.reshape",
                "aten.flatten", "aten.unsqueeze", "aten.squeeze", "aten.permute", "aten.transpose", "aten.slice",
                "aten.select", "aten.repeat", "aten.max_pool2d", "aten.avg_pool2d", "aten.adaptive_avg_pool2d"}


def _const_nonneg(gm: GraphModule, v) -> bool:
    if isinstance(v, numbers.Number) and not isinstance(v, bool):
        return v >= 0
    if isinstance(v, Node) and v.op == "get_attr":
        obj = gm
        for part in str(v.target).split("."):
            obj = getattr(obj, part)
        return bool((obj.detach() >= 0).all())
    return False


def positive(gm: GraphModule, n, depth: int = 0) -> bool:
    """``n`` (an FX node of the float graph) is >= 0 by construction (module doc); a constant counts
    when every entry is >= 0."""
    if depth > 32:
        return False
    if _const_nonneg(gm, n):
        return True
    if not isinstance(n, Node) or n.op != "call_function":
        return False
    name = canonical_op(n.target)
    if name in _POSITIVE:
        return True
    if name in _OF_POSITIVE:
        return positive(gm, n.args[0], depth + 1)
    if name in ("aten.clamp", "aten.clamp_min"):
        lo = arg(n, 1, "min", None)
        return isinstance(lo, numbers.Number) and lo >= 0
    if name == "aten.hardtanh":
        return float(arg(n, 1, "min_val", -1.0)) >= 0
    if name == "aten.pow":
        e = n.args[1] if len(n.args) > 1 else None
        return isinstance(e, numbers.Number) and float(e) == int(e) and int(e) % 2 == 0
    if name in ("aten.add", "aten.mul") and len(n.args) == 2 and n.kwargs.get("alpha", 1) == 1:
        a, b = n.args
        if name == "aten.mul" and a is b:
            return True
        return all(positive(gm, v, depth + 1) for v in (a, b))
    return False


def rewrite_div(gm: GraphModule) -> int:
    """Replace every ``div(x, y)`` (no rounding mode) whose divisor ``y`` is an activation that
    :func:`positive` accepts by ``mul(x, reciprocal(y))``; returns how many.  ``gm`` is changed in place."""
    done = 0
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or canonical_op(n.target) != "aten.div" or len(n.args) != 2:
            continue
        if n.kwargs.get("rounding_mode") is not None:
            continue
        x, y = n.args
        if not isinstance(y, Node) or y.op == "get_attr" or not positive(gm, y):
            continue
        with gm.graph.inserting_before(n):
            r = gm.graph.call_function(aten.reciprocal.default, (y,))
            m = gm.graph.call_function(aten.mul.Tensor, (x, r))
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node"):
            if key in n.meta:
                r.meta[key] = m.meta[key] = n.meta[key]
        # the reciprocal's output grid observed on what it produces: its input grid reaches 0 (an int8 grid
        # holds 0; int16 is symmetric), whose exact image (1 / the smallest code) would take every code
        r.meta["tabula_table_output"] = "observed"
        yv = y.meta.get("val")
        if yv is not None:
            with yv.fake_mode:
                r.meta["val"] = torch.reciprocal(yv)
        if "val" in n.meta:
            m.meta["val"] = n.meta["val"]
        n.replace_all_uses_with(m)
        gm.graph.erase_node(n)
        done += 1
    if done:
        gm.graph.lint()
        gm.recompile()
    return done
