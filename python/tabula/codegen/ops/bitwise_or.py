"""BITWISE_OR -> ``tabula_bitwise_or_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "BITWISE_OR"
KERNELS = kernels("bitwise_or", ('int8', 'int16', 'int32'))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "bitwise_or")
