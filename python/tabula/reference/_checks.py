"""Argument checks shared by the reference ops in ``ops/`` (kept outside that folder, which holds only ops)."""
from __future__ import annotations

import numpy as np

from tabula.qmath import DTYPE_RANGE


def need(cond: bool, op: str, msg: str) -> None:
    """Raise ValueError ``"<op>: <msg>"`` unless ``cond``: an argument outside the op's contract."""
    if not cond:
        raise ValueError(f"{op}: {msg}")


def check_zero_point(op: str, name: str, zp: int, dtype: str) -> None:
    """A zero point must be representable in the dtype it belongs to (TOSA 1.0)."""
    lo, hi = DTYPE_RANGE[dtype]
    need(lo <= int(zp) <= hi, op, f"{name}={zp} outside the {dtype} range [{lo}, {hi}]")


def to_int32_exact(op: str, acc: np.ndarray) -> np.ndarray:
    """Return the int64 accumulator as int32; the IR forbids wrapping, so an overflow raises."""
    lo, hi = DTYPE_RANGE["int32"]
    if acc.size and (acc.min() < lo or acc.max() > hi):
        raise ValueError(f"{op}: int32 accumulator overflow (range {acc.min()}..{acc.max()})")
    return acc.astype(np.int32)
