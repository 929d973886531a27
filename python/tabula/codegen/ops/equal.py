"""EQUAL -> ``tabula_equal_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "EQUAL"
KERNELS = kernels("equal", ('int32',))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "equal")
