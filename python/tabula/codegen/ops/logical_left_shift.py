"""LOGICAL_LEFT_SHIFT -> ``tabula_logical_left_shift_<t>`` (broadcasting, shapes merged at build time)."""
from ._binary import TEMPLATE, kernels
from ._binary import context as _context

OP = "LOGICAL_LEFT_SHIFT"
KERNELS = kernels("logical_left_shift", ('int8', 'int16', 'int32'))


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "logical_left_shift")
