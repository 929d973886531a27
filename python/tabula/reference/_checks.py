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


def to_int48_exact(op: str, acc: np.ndarray) -> np.ndarray:
    """Return the accumulator as int64 holding TOSA int48; a value outside 48 bits raises (the IR
    forbids wrapping: an int48 accumulator cannot hold it)."""
    check_int48(op, "int48 accumulator overflow", acc)
    return np.asarray(acc, dtype=np.int64)


def check_int48(op: str, what: str, x: np.ndarray) -> None:
    """Raise ``"<op>: <what> ..."`` unless every value of ``x`` fits int48 [-2^47, 2^47)."""
    lo, hi = DTYPE_RANGE["int64"]
    x = np.asarray(x)
    if x.size and (int(x.min()) < lo or int(x.max()) > hi):
        raise ValueError(f"{op}: {what} (range {int(x.min())}..{int(x.max())} leaves 48 bits [{lo}, {hi}])")


def act_and_acc(op: str, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> str:
    """Check the (activation, weight, bias) dtypes of CONV2D / FULLY_CONNECTED: int8 x int8 + int32
    or int16 x int8 + int64 (int48).  Returns the activation dtype name."""
    act = x.dtype.name
    acc = {"int8": "int32", "int16": "int64"}.get(act)
    need(acc is not None and w.dtype == np.int8 and b.dtype == np.dtype(acc), op,
         f"dtypes must be int8, int8, int32 or int16, int8, int64 (got {x.dtype}, {w.dtype}, {b.dtype})")
    return act
