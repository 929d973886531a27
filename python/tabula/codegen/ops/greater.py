"""GREATER -> ``tabula_greater_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "GREATER"
KERNELS = kernels("greater", ('int32',))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "greater")
