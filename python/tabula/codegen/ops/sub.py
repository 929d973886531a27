"""SUB int32 -> ``tabula_sub_s32`` (equal shapes) or ``tabula_sub_bcast_s32`` (broadcasting)."""
from ._broadcast import TEMPLATE, context as _context

OP = "SUB"
KERNELS = ("tabula_sub_s32", "tabula_sub_bcast_s32")


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "sub")
