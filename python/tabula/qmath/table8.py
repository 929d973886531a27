"""The int8 TABLE (TOSA 1.0 TABLE, int8: ``out = table[in + 128]``, 256 entries)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import QuantizationError
from ._common import _check_out_scale, _clip_to_domain
from .scaling import dequantize, quantize_round_half_even


def build_table_int8(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    in_zero_point: int,
    out_scale: float,
    out_zero_point: int,
    *,
    domain: tuple[float, float] | None = None,
) -> np.ndarray:
    """Build the 256-entry int8 TABLE for ``f`` (TOSA 1.0 TABLE, int8: ``out = table[in + 128]``).

    Enumerates every input code ``c = -128..127`` (never a linspace over qmin..qmax):
    ``table[c + 128] = clamp(rint(f(dq(c)) / out_scale) + out_zero_point, -128, 127)``, with
    ``dq`` and the quantization done exactly as PyTorch's float32 q/dq, so the table equals
    PyTorch's ``q(f(dq(c)))`` for every code.

    ``f`` maps a float32 array to a float32 array.  ``domain = (lo, hi)`` clips the dequantized
    inputs to ``[lo, hi]`` before ``f`` (inside the domain this changes nothing, so the table still
    equals PyTorch's; a code just outside, e.g. -1.0079 on an asin grid, gives ``f(lo)``).  Results of
    +-inf (poles: log(0), 1/0) saturate to 127 / -128, as PyTorch's quantize does.  NaN results (out of
    domain) raise.

    Raises:
        QuantizationError: ``f`` returned NaN for some code (the input grid leaves the domain).
    """
    _check_out_scale(out_scale)
    codes = np.arange(-128, 128, dtype=np.int32)
    x = _clip_to_domain(dequantize(codes, in_scale, in_zero_point), domain)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = np.asarray(f(x), dtype=np.float32)
    if np.isnan(y).any():
        bad = codes[np.isnan(y)]
        raise QuantizationError(
            f"table function is undefined (NaN) at input codes {bad.tolist()[:8]}...; "
            "the op's input qparams must keep every code inside its domain"
        )
    return quantize_round_half_even(y, out_scale, out_zero_point, "int8")

