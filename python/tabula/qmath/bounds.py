"""What every TABLE op reports: table-exact output qparams and the error bound over every input code."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes
from ..errors import QuantizationError
from ._common import _check_nan, _clip_to_domain, _end_knot_inside, _eval_f64
from .scaling import dequantize
from .table16 import table16_apply


def table_output_qparams(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    in_zero_point: int,
    dtype: str,
    *,
    domain: tuple[float, float] | None = None,
    eps: float = 2.0**-24,
) -> tuple[float, int]:
    """Table-exact output qparams: from the exact image of *every* input code under ``f`` (inputs
    clipped to ``domain``; +-inf at poles ignored -- those codes saturate), so no finite value
    saturates and the whole output range is used.

    int8: affine over [-128, 127] with 0 inside the range, computed exactly like PyTorch's MinMax
    observers in float32: ``scale = max((hi - lo) / 255, eps)``, ``zp = -128 - rint(lo / scale)``
    (round half to even), clamped.  int16: symmetric, ``scale = max(max|y| / 32767, eps)``, zp 0, where
    the image also takes the int16 table's virtual end code +32768: its entry (the right end of the last
    interpolation segment) then fits int16 too instead of clipping (which cost up to 6 LSB at the top
    of exp's range).
    ``f`` is evaluated in float32 for int8 (as the table is) and float64 for int16.

    Raises:
        QuantizationError: f is NaN at some code, infinite everywhere, or (int16) beyond float32; the
            domain is empty.
    """
    if dtype == "int8":
        codes = np.arange(-128, 128, dtype=np.int32)
        x = _clip_to_domain(dequantize(codes, in_scale, in_zero_point), domain)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = np.asarray(f(x), dtype=np.float32)
    elif dtype == "int16":
        codes = np.arange(-32768, 32769, dtype=np.int64)  # and the table's virtual end code +32768
        y = _end_knot_inside(_eval_f64(f, _clip_to_domain((codes - in_zero_point) * np.float64(in_scale), domain)))
    else:
        raise ValueError(f"table ops are int8 or int16, not {dtype}")
    _check_nan(y, codes)
    y = y[np.isfinite(y)]
    if y.size == 0:
        raise QuantizationError("table function is infinite at every input code")
    if dtype == "int8":
        lo = np.minimum(np.float32(y.min()), np.float32(0))
        hi = np.maximum(np.float32(y.max()), np.float32(0))
        scale = np.maximum((hi - lo) / np.float32(255.0), np.float32(eps))
        zp = int(np.clip(-128 - int(np.rint(lo / scale)), -128, 127))
        return float(scale), zp
    if np.abs(y).max() > np.finfo(np.float32).max:
        raise QuantizationError(
            f"table function reaches {np.abs(y).max():.3g}, beyond float32 (scales are float32): narrow the "
            "op's input range or keep it away from the overflow")
    amax = np.float32(np.abs(y).max())
    scale = np.maximum(amax / np.float32(32767.0), np.float32(eps))
    return float(scale), 0


def table_error_lsb(
    f: Callable[[np.ndarray], np.ndarray],
    table: np.ndarray,
    in_scale: float,
    in_zero_point: int,
    out_scale: float,
    out_zero_point: int,
    dtype: str,
    *,
    domain: tuple[float, float] | None = None,
) -> dict:
    """Error of a TABLE op in output LSB over every input code, against the exact function.

    The device output (int8: ``table[c + 128]``; int16: ``table`` is a 513-entry table -- interpolation
    then RESCALE x 2^-7, :func:`table_apply_int16` -- or a :class:`Table16Plan`, :func:`table16_apply`)
    is compared with ``f((c - zp_in) * s_in) / s_out + zp_out`` evaluated in
    float64 (inputs clipped to ``domain``) and clamped to the dtype's range: saturation at the range
    ends (and at poles) is counted in ``saturated`` rather than as error.

    Returns:
        ``{"max_lsb": float, "mean_lsb": float, "saturated": int}`` -- ``saturated`` counts the codes
        whose exact value lies more than half an LSB outside the representable range.
    """
    qmin, qmax = dtypes.range_of(dtype)
    if dtype == "int8":
        codes = np.arange(-128, 128, dtype=np.int64)
        dev = np.asarray(table, dtype=np.int64)[codes + 128]
    elif dtype == "int16":
        codes = np.arange(-32768, 32768, dtype=np.int64)
        dev = table16_apply(table, codes).astype(np.int64)
    else:
        raise ValueError(f"table ops are int8 or int16, not {dtype}")
    x = _clip_to_domain((codes - in_zero_point) * np.float64(in_scale), domain)
    y = _eval_f64(f, x) / np.float64(out_scale) + out_zero_point
    _check_nan(y, codes)
    yc = np.clip(y, qmin, qmax)
    err = np.abs(dev - yc)
    saturated = int(np.count_nonzero((y < qmin - 0.5) | (y > qmax + 0.5)))
    return {"max_lsb": float(err.max()), "mean_lsb": float(err.mean()), "saturated": saturated}
