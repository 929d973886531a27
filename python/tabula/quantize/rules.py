"""The quantization rules table: every supported aten op and its class, as data.

The annotator (:mod:`tabula.quantize.quantizer`), the lowering and the tests read these tables and
nothing else decides an op's qparams.  Classes (see ``shared/DESIGN.md``):

``WEIGHTED``        input: activation qspec; weight: per-channel symmetric int8 [-127, 127] (axis 0);
                    bias: int32, scale = s_in * s_w[c]; output: own activation qspec.
``TABLE``           input: activation qspec; output: **own** activation qspec (never shared: these
                    functions compress or warp the range -- SiLU never goes below about -0.2785).
``SHARED``          range-preserving data movement and max pooling: input and output share the
                    producer's qparams exactly, so the op needs no RESCALE.

In-place overloads (``aten.silu_``, ``aten.relu_``, ...) resolve to their functional twin *before*
lookup (:func:`canonical_op`), so the two can never be classified differently.
"""
from __future__ import annotations

from enum import Enum
from typing import Callable

import torch

aten = torch.ops.aten


class OpClass(Enum):
    """How an op's input and output qparams are chosen."""

    WEIGHTED = "weighted"
    TABLE = "table"
    SHARED = "shared"


#: Weighted ops: aten packet name -> index of (input, weight, bias) in the node's args.
WEIGHTED: dict[str, tuple[int, int, int]] = {
    "aten.conv2d": (0, 1, 2),
    "aten.linear": (0, 1, 2),
}

#: Table ops: aten packet name -> the float32 function the TABLE samples (PyTorch's own op, so the
#: table reproduces PyTorch's float semantics exactly).
TABLE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "aten.silu": aten.silu.default,
    "aten.sigmoid": aten.sigmoid.default,
    "aten.tanh": aten.tanh.default,
    "aten.hardswish": aten.hardswish.default,
    "aten.hardsigmoid": aten.hardsigmoid.default,
    "aten.elu": aten.elu.default,
    "aten.exp": aten.exp.default,
    "aten.erf": aten.erf.default,
    "aten.sin": aten.sin.default,
    "aten.cos": aten.cos.default,
    "aten.atan": aten.atan.default,
    "aten.softplus": aten.softplus.default,
}

#: Range-preserving ops that share their producer's qparams: packet name -> index of the data input.
SHARED: dict[str, int] = {
    "aten.max_pool2d": 0,
    "aten.flatten": 0,
    "aten.view": 0,
    "aten.reshape": 0,
}

#: Graph nodes that carry no computation and need no rule.
IGNORED: frozenset[str] = frozenset({"aten.dropout", "aten.detach", "aten.alias"})

#: Structural nodes (tuple indexing of a multi-output op): never reported as the unsupported op
#: themselves -- the op that produced the tuple is.
STRUCTURAL: frozenset[str] = frozenset({"_operator.getitem"})


def canonical_op(target: object) -> str:
    """Name of the functional aten op for a node target: ``aten.silu_.default`` -> ``"aten.silu"``.

    In-place overloads (a trailing ``_`` on an aten op that has a functional twin) map to the twin.
    Non-aten targets (e.g. ``operator.getitem``) return their qualified name.
    """
    if isinstance(target, torch._ops.OpOverload):
        name = target.overloadpacket._qualified_op_name.replace("::", ".")
    elif isinstance(target, torch._ops.OpOverloadPacket):
        name = target._qualified_op_name.replace("::", ".")
    else:
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', repr(target))}"
    if name.endswith("_") and not name.endswith("__"):
        twin = name[:-1]
        ns, op = twin.split(".", 1)
        if hasattr(getattr(torch.ops, ns), op):
            return twin
    return name


def op_class(target: object) -> OpClass | None:
    """The :class:`OpClass` of a node target after in-place resolution, or ``None`` if unsupported."""
    name = canonical_op(target)
    if name in WEIGHTED:
        return OpClass.WEIGHTED
    if name in TABLE:
        return OpClass.TABLE
    if name in SHARED:
        return OpClass.SHARED
    return None


def supported_ops() -> list[str]:
    """Every aten op name the rules table covers, sorted."""
    return sorted({*WEIGHTED, *TABLE, *SHARED})
