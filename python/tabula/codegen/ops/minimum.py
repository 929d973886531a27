"""MINIMUM -> ``tabula_minimum_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "MINIMUM"
KERNELS = kernels("minimum", ('int32',))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "minimum")
