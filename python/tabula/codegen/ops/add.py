"""ADD int32 -> ``tabula_add_s32`` (equal shapes) or ``tabula_add_bcast_s32`` (broadcasting)."""
from ._broadcast import TEMPLATE, context as _context

OP = "ADD"
KERNELS = ("tabula_add_s32", "tabula_add_bcast_s32")


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "add")
