"""MAXIMUM -> ``tabula_maximum_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "MAXIMUM"
KERNELS = kernels("maximum", ('int32',))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "maximum")
