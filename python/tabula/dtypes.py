"""The integer dtypes of the IR, one record each: every stage reads its facts from here.

TOSA 1.0 names the accumulator of int16 x int8 ``int48``; it is stored in 64 bits (``int64_t`` in C,
``np.int64`` in numpy) and every value must fit 48 bits.  The IR calls it ``"int48"``; IR files of
version 1 called it ``"int64"`` and are read as ``"int48"`` (:func:`get` accepts both).

A leaf module: numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DType", "DTYPES", "ACT_DTYPES", "ACC_DTYPE", "get", "of", "range_of", "zero_point_range"]


@dataclass(frozen=True)
class DType:
    """One IR integer dtype.

    ``name``: the IR name (``"int8"``, ``"int16"``, ``"int32"``, ``"int48"``); ``bits``: value bits;
    ``storage``: the numpy dtype holding it; ``ctype``: the C type; ``sfx``: the C kernel name suffix
    (``tabula_<op>_<sfx>``, from the C storage type); ``lo``/``hi``: the value range (inclusive).
    """

    name: str
    bits: int
    storage: str
    ctype: str
    sfx: str

    @property
    def lo(self) -> int:
        """Smallest value: ``-2^(bits-1)``."""
        return -(1 << (self.bits - 1))

    @property
    def hi(self) -> int:
        """Largest value: ``2^(bits-1) - 1``."""
        return (1 << (self.bits - 1)) - 1

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (the storage type's size)."""
        return np.dtype(self.storage).itemsize

    @property
    def np(self) -> np.dtype:
        """The numpy storage dtype."""
        return np.dtype(self.storage)


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("int8", 8, "int8", "int8_t", "s8"),
        DType("int16", 16, "int16", "int16_t", "s16"),
        DType("int32", 32, "int32", "int32_t", "s32"),
        DType("int48", 48, "int64", "int64_t", "s64"),
    )
}

#: Activation dtypes (int8: affine; int16: symmetric, zero point 0).
ACT_DTYPES = ("int8", "int16")

#: Accumulator dtype of each activation dtype (TOSA 1.0: int8 -> int32, int16 -> int48).
ACC_DTYPE = {"int8": "int32", "int16": "int48"}

_ALIASES = {"int64": "int48"}  # IR version 1; and numpy arrays of the reference hold int48 as int64


def get(name: str) -> DType:
    """The record of IR dtype ``name`` (``"int64"`` is read as ``"int48"``).  KeyError names the
    dtypes that exist."""
    try:
        return DTYPES[_ALIASES.get(name, name)]
    except KeyError:
        raise KeyError(f"unknown IR dtype {name!r}; the IR has {', '.join(DTYPES)}") from None


def of(x) -> DType:
    """The record of a numpy array / numpy dtype (int64 storage means int48) or an IR dtype name."""
    name = x if isinstance(x, str) else np.dtype(getattr(x, "dtype", x)).name
    return get(name)


def range_of(name: str) -> tuple[int, int]:
    """``(lo, hi)`` of IR dtype ``name``."""
    d = get(name)
    return d.lo, d.hi


def zero_point_range(name: str) -> tuple[int, int]:
    """Zero points a tensor of dtype ``name`` may carry (TOSA 1.0, signed types): any int8 value for
    int8; only 0 for int16 (symmetric), int32 and int48."""
    return range_of(name) if name == "int8" else (0, 0)
