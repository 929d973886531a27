"""TOSA 1.0 integer scaling and PyTorch's quantize/dequantize: every function names its rounding rule.

* ``apply_scale_32`` (TOSA 1.0 section 4.3.3 "Integer scaling"): ``(v*m + 2^(s-1)) >> s`` with an
  arithmetic shift, i.e. a *single* rounding, half toward +infinity.  ``double_round`` is never used.
* quantize / dequantize as in PyTorch's ``quantized_decomposed.quantize_per_tensor``: round half to
  even (``torch.round`` / ``numpy.rint``), then clamp.

The C kernels (``firmware_templates/kernels``) implement the same rules; tests pin both at ties and at
mantissa overflow.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..errors import QuantizationError


def quantize_multiplier(scale: float) -> tuple[int, int]:
    """Split a positive real ``scale`` into a TOSA ``(multiplier, shift)`` pair.

    ``scale ~= multiplier * 2**-shift`` with ``multiplier`` in ``[2**30, 2**31)`` (31-bit mantissa,
    from ``math.frexp``) and ``2 <= shift <= 62`` (TOSA 1.0 RESCALE, ``scale32=true``).  A scale
    whose mantissa rounds up to ``2**31`` just below ``2**29`` also needs shift 1 and is rejected.

    Rounding: the mantissa is rounded half to even; when that rounding reaches ``2**31`` (mantissa
    overflow, e.g. scale = 1 - 2**-40) the pair is renormalised to ``(2**30, shift - 1)``.  A scale
    below ``2**-31`` is represented with a smaller multiplier at ``shift = 62`` (precision is lost,
    never range; one rounding, ``round(scale * 2**62)``); a scale of exactly 0 gives ``(0, 2)``.

    Raises:
        QuantizationError: ``scale`` is negative, not finite, or too large (>= 2**29) for shift >= 2.
    """
    if not math.isfinite(scale) or scale < 0:
        raise QuantizationError(f"rescale factor {scale!r} must be finite and >= 0")
    if scale == 0.0:
        return 0, 2
    mantissa, exponent = math.frexp(scale)  # scale = mantissa * 2**exponent, mantissa in [0.5, 1)
    multiplier = round(mantissa * (1 << 31))  # Python round: half to even
    shift = 31 - exponent
    if multiplier == (1 << 31):  # mantissa overflow
        multiplier >>= 1
        shift -= 1
    if shift > 62:  # very small scale: keep shift at its maximum, round once at 2^-62
        multiplier = round(math.ldexp(scale, 62))  # exact scaling; Python round: half to even
        shift = 62
    if shift < 2:
        raise QuantizationError(
            f"rescale factor {scale!r} is too large for a 32-bit RESCALE (needs shift >= 2); "
            "check the scales of the tensors around this op"
        )
    return int(multiplier), int(shift)


def quantize_multiplier_16(scale: float) -> tuple[int, int]:
    """Split ``scale`` into a TOSA 16-bit ``(multiplier, shift)`` (RESCALE with ``scale32=false``,
    used for int48 accumulators): ``multiplier`` in ``[2**14, 2**15)``, ``2 <= shift <= 62``.

    Rounding: the 15-bit mantissa is rounded half to even; mantissa overflow renormalises to
    ``(2**14, shift - 1)``; scales below ``2**-48`` round once at ``2**-62``.

    Raises:
        QuantizationError: negative, non-finite or too large (needs shift < 2) scales.
    """
    if not math.isfinite(scale) or scale < 0:
        raise QuantizationError(f"rescale factor {scale!r} must be finite and >= 0")
    if scale == 0.0:
        return 0, 2
    mantissa, exponent = math.frexp(scale)
    multiplier = round(mantissa * (1 << 15))
    shift = 15 - exponent
    if multiplier == (1 << 15):
        multiplier >>= 1
        shift -= 1
    if shift > 62:
        multiplier = round(math.ldexp(scale, 62))
        shift = 62
    if shift < 2:
        raise QuantizationError(
            f"rescale factor {scale!r} is too large for a 16-bit RESCALE (needs shift >= 2)"
        )
    return int(multiplier), int(shift)


def apply_scale_16_round_half_up(value: np.ndarray, multiplier, shift) -> np.ndarray:
    """TOSA ``apply_scale_16``: ``(value*multiplier + 2**(shift-1)) >> shift`` for int48 ``value``
    and a 16-bit ``multiplier`` (< 2**15).  Exact in int64 (``|value*multiplier| < 2**62``).
    Rounding: half toward +infinity.  Returns int64; the caller clamps."""
    return apply_scale_32_round_half_up(value, multiplier, shift)


def reciprocal_scale(count: int) -> tuple[int, int]:
    """TOSA 1.0 ``reciprocal_scale`` (AVG_POOL2D divisor): ``(multiplier, shift)`` with
    ``multiplier * 2**-shift ~= 1/count``, ``multiplier`` in ``[2**30, 2**31)``.

    ``k = ceil(log2(count))``; ``multiplier = ((2**30 + 1) << k) // count``; ``shift = 30 + k``.
    Valid for ``1 <= count <= 2**30`` (beyond, the multiplier reaches 2**31).
    Raises QuantizationError for counts outside that range."""
    if count <= 0 or count > 2**30:
        raise QuantizationError(f"average pool window of {count} elements")
    k = (count - 1).bit_length()
    return int((((1 << 30) + 1) << k) // count), 30 + k


def apply_scale_32_round_half_up(value: np.ndarray, multiplier, shift) -> np.ndarray:
    """TOSA ``apply_scale_32`` with single rounding: ``(value*multiplier + 2**(shift-1)) >> shift``.

    Args:
        value: integer array (int32 range), any shape.
        multiplier, shift: scalars or arrays broadcastable to ``value`` (per-channel on the last axis).
    Returns:
        int64 array of the same shape; the caller clamps to the output dtype.
    Rounding: half toward +infinity (arithmetic shift of a biased value), as TOSA with
    ``double_round = false``.  Exact: ``|value*multiplier| < 2**62`` fits int64.
    """
    v = np.asarray(value, dtype=np.int64)
    m = np.asarray(multiplier, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    return (v * m + (np.int64(1) << (s - 1))) >> s


def quantize_round_half_even(x: np.ndarray, scale, zero_point, dtype: str) -> np.ndarray:
    """PyTorch ``quantize_per_tensor``: ``clamp(rint(x / scale) + zero_point, qmin, qmax)``.

    Rounding: half to even (``numpy.rint``), which is what ``torch.round`` does.  Like PyTorch's
    decomposed kernel the product ``x * float32(1.0 / scale)`` is taken in float32 (not ``x / scale``),
    so results agree with ``torch.ops.quantized_decomposed.quantize_per_tensor`` bit for bit.
    Returns an array of numpy dtype ``dtype``.
    """
    qmin, qmax = dtypes.range_of(dtype)
    xf = np.asarray(x, dtype=np.float32)
    q = np.rint(xf * np.float32(1.0 / scale)) + np.float32(zero_point)
    return np.clip(q, qmin, qmax).astype(dtype)


def quantize_int32_round_half_even(x: np.ndarray, scale: float, limit_bits: int = 31) -> np.ndarray:
    """A float constant on an int32 grid: ``rint(x / scale)`` computed in float64 (so a 30-bit result
    is exact but for that one rounding), half to even.  Used for the int32 operands the arithmetic
    lowering gives ADD / SUB / MUL, where the grid is chosen so every value fits.

    Raises:
        QuantizationError: ``scale`` is not positive and finite, ``x`` holds NaN/inf, or a result's
            magnitude exceeds ``2**limit_bits`` (the grid was chosen wrongly).
    """
    if not (math.isfinite(scale) and scale > 0):
        raise QuantizationError(f"int32 constant scale {scale!r} must be finite and > 0")
    xf = np.asarray(x, dtype=np.float64)
    if not np.isfinite(xf).all():
        raise QuantizationError("constant holds NaN or inf")
    q = np.rint(xf / float(scale))
    if q.size and float(np.abs(q).max()) > 2.0**limit_bits:
        raise QuantizationError(f"constant up to {float(np.abs(xf).max())!r} needs more than {limit_bits} bits on the "
                                f"int32 grid {scale!r}")
    return q.astype(np.int32)


def dequantize(q: np.ndarray, scale, zero_point) -> np.ndarray:
    """``(q - zero_point) * scale`` in float32 (PyTorch ``dequantize_per_tensor``)."""
    return (np.asarray(q, dtype=np.float32) - np.float32(zero_point)) * np.float32(scale)

