"""GREATER_EQUAL -> ``tabula_greater_equal_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "GREATER_EQUAL"
KERNELS = kernels("greater_equal", ('int32',))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "greater_equal")
