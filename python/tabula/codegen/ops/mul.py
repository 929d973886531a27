"""MUL int32 -> ``tabula_mul_s32`` (equal shapes) or ``tabula_mul_bcast_s32`` (broadcasting)."""
from ._broadcast import TEMPLATE, context as _context

OP = "MUL"
KERNELS = ("tabula_mul_s32", "tabula_mul_bcast_s32")


def context(op, g, ref) -> dict:
    return _context(op, g, ref, "mul", f", {int(op.attrs.get('shift', 0))}")
