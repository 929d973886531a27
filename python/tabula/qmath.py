"""All quantization arithmetic of tabula, in one place.

Every function names its rounding rule.  The device C code (``firmware_templates/runtime``)
implements the same rules; tests pin both at ties and at mantissa overflow.

Semantics follow the TOSA 1.0 specification:

* ``apply_scale_32`` (TOSA 1.0 section 4.3.3 "Integer scaling"): ``(v*m + 2^(s-1)) >> s`` with an
  arithmetic shift, i.e. a *single* rounding, half toward +infinity.  ``double_round`` is never used.
* quantize / dequantize as in PyTorch's ``quantized_decomposed.quantize_per_tensor``: round half to
  even (``torch.round`` / ``numpy.rint``), then clamp.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = [
    "DTYPE_RANGE",
    "QuantizationError",
    "quantize_multiplier",
    "apply_scale_32_round_half_up",
    "quantize_round_half_even",
    "dequantize",
    "build_table_int8",
    "build_table_int16",
    "build_table_int16_split",
    "build_table_int16_zoom",
    "build_table_int16_plan",
    "Table16Plan",
    "Table16Term",
    "table16_apply",
    "table_output_qparams",
    "table_error_lsb",
    "quantize_multiplier_16",
    "apply_scale_16_round_half_up",
    "reciprocal_scale",
]

#: (qmin, qmax) of each integer dtype name used by the IR.
DTYPE_RANGE: dict[str, tuple[int, int]] = {
    "int8": (-128, 127),
    "int16": (-32768, 32767),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**47), 2**47 - 1),  # TOSA int48 accumulator, stored in 64 bits
}


class QuantizationError(ValueError):
    """A scale, zero point or table that the integer program cannot represent."""


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
    qmin, qmax = DTYPE_RANGE[dtype]
    xf = np.asarray(x, dtype=np.float32)
    q = np.rint(xf * np.float32(1.0 / scale)) + np.float32(zero_point)
    return np.clip(q, qmin, qmax).astype(dtype)


def dequantize(q: np.ndarray, scale, zero_point) -> np.ndarray:
    """``(q - zero_point) * scale`` in float32 (PyTorch ``dequantize_per_tensor``)."""
    return (np.asarray(q, dtype=np.float32) - np.float32(zero_point)) * np.float32(scale)


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


# ---- table ops: domains, int16 tables, table-exact output qparams, error bounds ----------------
#: Input codes of the 513 int16 TABLE entries: entry i sits at code -32768 + 128*i (i = 512 is the
#: virtual code +32768, reached only as the right end of the last segment).
INT16_TABLE_CODES = -32768 + 128 * np.arange(513, dtype=np.int64)

#: (multiplier, shift) of the RESCALE x 2^-7 that follows an int16 TABLE (16.7 -> int16):
#: ``(v * 2^30 + 2^36) >> 37 == floor((v + 64) / 128)``, half toward +infinity.
TABLE16_RESCALE = (1 << 30, 37)

#: Slope limits of an int16 TABLE (TOSA 1.0 ``apply_lookup_s``: ``REQUIRE(slope`` fits int16``)``).
_SLOPE_MIN, _SLOPE_MAX = -32768, 32767

#: The int16 "minimax" table searches each entry within +-this many LSB of the least-squares knot.
_TABLE16_SEARCH = 3

#: Extra fraction bits of a *split* int16 table (:func:`build_table_int16_split`): its knots are in
#: 2^-7 output LSB, held as ``hi * 2^7 + lo`` in two ordinary int16 TABLEs.  7 is the most TOSA
#: allows: the RESCALE x 2^7 of the ``hi`` TABLE's output (|v| <= 2^22) is ``(v * 2^30 + 2^22) >> 23``
#: and TOSA's apply_scale_32 REQUIREs ``|v| < 2^(shift-1)`` = 2^22 (x 2^8 would need shift 22: 2^21).
TABLE16_FRAC_BITS = 7

#: (multiplier, shift) of the RESCALE int32 -> int32 x 2^7 applied to the ``hi`` TABLE's output:
#: ``(v * 2^30 + 2^22) >> 23 == v * 2^7`` exactly.
TABLE16_SPLIT_SHIFT_UP = (1 << 30, 30 - TABLE16_FRAC_BITS)

#: (multiplier, shift) of the RESCALE x 2^-14 that takes the split table's sum (16.14) to int16:
#: ``floor((v + 2^13) / 2^14)``, half toward +infinity.
TABLE16_SPLIT_RESCALE = (1 << 30, 37 + TABLE16_FRAC_BITS)

#: A split int16 table searches each knot within +-this many 1/16 LSB of the least-squares knot.
_TABLE16_SPLIT_SEARCH = 8

#: int16 table ops whose single table errs by more than this (output LSB, max over every code) get a
#: split and/or zoomed table when that is more accurate (:func:`build_table_int16_plan`).
TABLE16_SPLIT_ABOVE_LSB = 1.0


def _clip_to_domain(x: np.ndarray, domain) -> np.ndarray:
    """``x`` clipped to ``domain = (lo, hi)`` (either end may be +-inf), same dtype; None: unchanged."""
    if domain is None:
        return x
    lo, hi = domain
    if not lo <= hi:  # also catches NaN
        raise QuantizationError(f"domain {tuple(domain)} is empty or NaN: pass (lo, hi) with lo <= hi")
    return np.clip(x, x.dtype.type(lo), x.dtype.type(hi))


def _eval_f64(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``f(x)`` on a float64 array, as float64, silencing the warnings of poles (1/0, log 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(f(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _check_out_scale(out_scale: float) -> None:
    if not (np.isfinite(out_scale) and out_scale > 0):
        raise QuantizationError(f"output scale {out_scale} is not a positive finite number")


def _end_knot_inside(y: np.ndarray) -> np.ndarray:
    """int16 tables evaluate f at the virtual code +32768 too (the right knot of the last segment, no
    input reaches it).  Where f is undefined just there (sqrt(1 - x) with x = 32768 * s > 1), that knot
    takes f at the last real code instead of failing the op."""
    if y.size > 1 and np.isnan(y[-1]) and not np.isnan(y[-2]):
        y = y.copy()
        y[-1] = y[-2]
    return y


def _check_nan(y: np.ndarray, codes: np.ndarray) -> None:
    if np.isnan(y).any():
        bad = codes[np.isnan(y)]
        raise QuantizationError(
            f"table function is undefined (NaN) at input codes {bad.tolist()[:8]}...; "
            "the op's input qparams must keep every code inside its domain (or pass domain=)"
        )


def table_interpolate_int16(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """TOSA 1.0 int16 TABLE (``apply_lookup_s``) on int16 ``codes``: ``i = (c + 32768) >> 7``,
    ``frac = c & 127``, ``(table[i] << 7) + (table[i+1] - table[i]) * frac`` as int32 (16.7).
    Exact integer arithmetic, no rounding."""
    v = np.asarray(codes, dtype=np.int64) + 32768
    t = np.asarray(table, dtype=np.int64)
    i, frac = v >> 7, v & 127
    return ((t[i] << 7) + (t[i + 1] - t[i]) * frac).astype(np.int32)


def table_apply_int16(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """What the device computes for an int16 table op: :func:`table_interpolate_int16` followed by
    RESCALE x 2^-7 (:data:`TABLE16_RESCALE`, single rounding half toward +infinity) clamped to int16."""
    m, s = TABLE16_RESCALE
    out = apply_scale_32_round_half_up(table_interpolate_int16(table, codes), m, s)
    return np.clip(out, -32768, 32767).astype(np.int16)


def split_table_int16(knots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split 513 knots in 2^-7 output LSB (int64) into two int16 tables with
    ``knots == hi * 2^7 + lo`` exactly: ``hi = floor((k + 64) / 128)``, ``lo`` in [-64, 63].
    Interpolation is linear in the table, so ``interp(hi) * 2^7 + interp(lo) == interp(knots)``."""
    k = np.asarray(knots, dtype=np.int64)
    u = np.int64(1) << TABLE16_FRAC_BITS
    hi = (k + (u >> 1)) >> TABLE16_FRAC_BITS
    return hi, k - hi * u


@dataclass(frozen=True)
class Table16Term:
    """One term of an int16 table op: ``TABLE(index, hi)`` (and ``TABLE(index, lo)`` when split) where
    ``index = x`` (``zoom == 0``) or ``RESCALE x * 2^zoom`` saturated to int16 (a 2^zoom finer view of
    the middle of the input range).  ``hi``/``lo``: int16 [513]; knots are ``hi`` (LSB) or
    ``hi * 2^7 + lo`` (1/128 LSB)."""

    zoom: int
    hi: np.ndarray
    lo: np.ndarray | None = None

    def knots(self) -> np.ndarray:
        """int64 [513] in 2^-7 LSB when split, else in LSB."""
        h = np.asarray(self.hi, dtype=np.int64)
        return h if self.lo is None else h * (1 << TABLE16_FRAC_BITS) + np.asarray(self.lo, dtype=np.int64)


@dataclass(frozen=True)
class Table16Plan:
    """How an int16 table op is computed: the sum of its terms' interpolations, then one RESCALE to
    the int16 output (all TOSA 1.0 ops; :func:`table16_apply` is the exact device arithmetic)::

        idx_k = RESCALE(x, x 2^k)                       one per zoom k > 0 (int16, saturating)
        H     = ADD over terms of TABLE(idx, hi)        int32, 16.7
        no lo:  y = RESCALE(H, x 2^-7)
        split:  y = RESCALE(ADD(RESCALE(H, x 2^7), ADD over terms of TABLE(idx, lo)), x 2^-14)

    Forms built by :func:`build_table_int16_plan`: one table (2 ops); one split table (5 ops); a
    zoomed pair, ``[zoom k: f on the middle 1/2^k of the range, clamped beyond; zoom 0: the rest]``
    (5 ops); the zoomed pair split (10 ops)."""

    terms: tuple[Table16Term, ...]

    @property
    def split(self) -> bool:
        return any(t.lo is not None for t in self.terms)

    @property
    def n_tables(self) -> int:
        return sum(1 + (t.lo is not None) for t in self.terms)

    @property
    def n_ops(self) -> int:
        """IR ops: zoom RESCALEs + TABLEs + ADDs + RESCALEs (2 for one table ... 10 for a split zoomed pair)."""
        n = len({t.zoom for t in self.terms} - {0}) + self.n_tables + len(self.terms) - 1  # zooms, TABLEs, hi ADDs
        if not self.split:
            return n + 1  # RESCALE x 2^-7
        n_lo = sum(t.lo is not None for t in self.terms)
        return n + 1 + (n_lo - 1) + 1 + 1  # RESCALE x 2^7, lo ADDs, ADD hi+lo, RESCALE x 2^-14

    @property
    def form(self) -> str:
        """``single``, ``split``, ``zoom<k>`` or ``zoom<k>+split``."""
        zooms = sorted({t.zoom for t in self.terms} - {0})
        name = "+".join([f"zoom{k}" for k in zooms] + (["split"] if self.split else []))
        return name or "single"


def zoom_rescale(k: int) -> tuple[int, int]:
    """(multiplier, shift) of the RESCALE int16 -> int16 x 2^k of a zoomed term: ``(x * 2^30 + 2^(29-k))
    >> (30-k) == x * 2^k`` exactly, then saturated to int16 (TOSA's REQUIRE |x| < 2^(29-k) holds)."""
    return 1 << 30, 30 - k


def _zoom_index(codes: np.ndarray, k: int) -> np.ndarray:
    if k == 0:
        return np.asarray(codes, dtype=np.int64)
    return np.clip(apply_scale_32_round_half_up(codes, *zoom_rescale(k)), -32768, 32767)


def _interp64(knots: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """TOSA int16 TABLE interpolation on int64 knots (any precision): ``(k[i] << 7) + (k[i+1]-k[i]) * frac``."""
    v = np.asarray(idx, dtype=np.int64) + 32768
    k = np.asarray(knots, dtype=np.int64)
    i, frac = v >> 7, v & 127
    return (k[i] << 7) + (k[i + 1] - k[i]) * frac


def table16_apply(plan: "Table16Plan | np.ndarray", codes: np.ndarray) -> np.ndarray:
    """What the device computes for an int16 table op (:class:`Table16Plan`; a bare 513-entry table is
    the single form), step by step as the IR does it, on int16 ``codes``.

    Raises:
        QuantizationError: an int32 intermediate would overflow, or the RESCALE x 2^7 would break TOSA's
            REQUIRE |v| < 2^22 (never for plans :func:`build_table_int16_plan` returns: it checks them
            on every code).
    """
    if not isinstance(plan, Table16Plan):
        plan = Table16Plan((Table16Term(0, np.asarray(plan)),))
    lo32, hi32 = DTYPE_RANGE["int32"]
    idx = {k: _zoom_index(codes, k) for k in {t.zoom for t in plan.terms}}

    def total(parts):
        acc = np.zeros(np.shape(codes), dtype=np.int64)
        for part in parts:
            acc = acc + part
            if acc.size and (acc.min() < lo32 or acc.max() > hi32):
                raise QuantizationError("int16 table: a sum of table terms leaves int32")
        return acc

    h = total(table_interpolate_int16(t.hi, idx[t.zoom]).astype(np.int64) for t in plan.terms)
    if not plan.split:
        out = apply_scale_32_round_half_up(h, *TABLE16_RESCALE)
        return np.clip(out, -32768, 32767).astype(np.int16)
    lim = 1 << (TABLE16_SPLIT_SHIFT_UP[1] - 1)
    if h.size and (h.min() < -lim or h.max() >= lim):
        raise QuantizationError("split int16 table: the hi sum leaves [-2^22, 2^22), TOSA's REQUIRE for x 2^7")
    h = apply_scale_32_round_half_up(h, *TABLE16_SPLIT_SHIFT_UP)
    lo = [table_interpolate_int16(t.lo, idx[t.zoom]).astype(np.int64) for t in plan.terms if t.lo is not None]
    acc = total([h, total(lo)])
    out = apply_scale_32_round_half_up(acc, *TABLE16_SPLIT_RESCALE)
    return np.clip(out, -32768, 32767).astype(np.int16)


def _check_slopes(table: np.ndarray, in_scale: float) -> None:
    d = np.diff(np.asarray(table, dtype=np.int64))
    bad = np.flatnonzero((d < _SLOPE_MIN) | (d > _SLOPE_MAX))
    if bad.size:
        i = int(bad[0])
        c0, c1 = int(INT16_TABLE_CODES[i]), int(INT16_TABLE_CODES[i + 1])
        raise QuantizationError(
            f"int16 TABLE too steep: entries {i} and {i + 1} (input codes {c0}..{c1}, "
            f"x in [{c0 * in_scale:.6g}, {c1 * in_scale:.6g}]) differ by {int(d[i])}, outside the int16 "
            f"slope range [{_SLOPE_MIN}, {_SLOPE_MAX}] of TOSA's interpolating TABLE ({bad.size} segment(s)); "
            "f crosses more than half the output range within 128 input codes (a pole or a jump). "
            "Remedy: keep the op's input range away from the pole (a narrower input range, or a domain "
            "that excludes it), widen the output range, or quantize this op in int8 (256 entries, no slope limit)"
        )


def _table16_segment_directions(y: np.ndarray, y_end: float) -> np.ndarray:
    """Per segment k (codes -32768+128k .. +128): +1 / -1 where the (clipped) target is monotone
    non-decreasing / non-increasing over the segment including its right end, 0 where it is neither
    and 2 where it is constant (the table must then be flat there)."""
    seg = np.concatenate([y.reshape(512, 128), np.append(y.reshape(512, 128)[1:, 0], y_end)[:, None]], axis=1)
    d = np.diff(seg, axis=1)
    up, down = (d >= 0).all(axis=1), (d <= 0).all(axis=1)
    return np.where(up & down, 2, np.where(up, 1, np.where(down, -1, 0)))


def _table16_least_squares(Y: np.ndarray, y_end: float) -> np.ndarray:
    """Real-valued 513 knots of the continuous piecewise-linear function (knots every 128 codes)
    nearest to the target in least squares -- what the interpolation can represent best on average."""
    r = np.arange(128, dtype=np.float64) / 128.0
    a, b = 1.0 - r, r  # weights of the left and right knot for each code of a segment
    saa, sbb, sab = float(a @ a), float(b @ b), float(a @ b)
    n = 513
    A = np.zeros((n, n))
    idx = np.arange(512)
    A[idx, idx] += saa
    A[idx + 1, idx + 1] += sbb
    A[idx, idx + 1] += sab
    A[idx + 1, idx] += sab
    rhs = np.zeros(n)
    rhs[:512] += Y @ a
    rhs[1:] += Y @ b
    # the virtual end knot is pinned weakly to the function's value there (it only has b weights)
    A[n - 1, n - 1] += 1e-6
    rhs[n - 1] += 1e-6 * y_end
    return np.linalg.solve(A, rhs)


def _table16_minimax(Y: np.ndarray, states: np.ndarray, dirs: np.ndarray, frac_bits: int = 0,
                     base: np.ndarray | None = None, mask: np.ndarray | None = None) -> np.ndarray:
    """Globally best integer table among ``states`` (candidate values per entry, int64 [513, S], in
    2^-frac_bits output LSB: 0 for a single table, :data:`TABLE16_FRAC_BITS` for a split one) by
    dynamic programming over the chain of entries: first the smallest achievable max error of the
    device output over every code (a bottleneck path: a segment's error depends only on its two
    entries), then, among tables reaching it, the smallest sum of squared errors.  Transitions that
    leave int16, break the slope limit or reverse a monotone segment (:func:`_table16_segment_directions`)
    are forbidden, so the result keeps f's monotonicity.
    ``base`` (int64 [512, 128], in 2^-(7+frac_bits) LSB): what the other terms of a composite table add
    at each code before the final rounding; ``mask`` (bool [512, 128]): the index codes that occur
    (a zoomed term only sees multiples of 2^zoom); errors elsewhere are ignored."""
    n, S = states.shape
    r = np.arange(128, dtype=np.int64)
    sh = 7 + frac_bits
    half = np.int64(1) << (sh - 1)
    u = 1 << frac_bits
    segmax = np.empty((n - 1, S, S))
    segss = np.empty((n - 1, S, S))
    for a in range(S):  # left entry state
        ta = states[:-1, a][:, None, None]
        tb = states[1:, :][:, :, None]
        v = (ta << 7) + (tb - ta) * r  # [512, S, 128] in 2^-(7+frac_bits) LSB
        if base is not None:
            v = v + base[:, None, :]
        err = np.abs(np.clip((v + half) >> sh, -32768, 32767) - Y[:, None, :])
        if mask is not None:
            err = np.where(mask[:, None, :], err, 0.0)
        segmax[:, a, :] = err.max(axis=2)
        segss[:, a, :] = (err * err).sum(axis=2)
    d = states[1:, None, :] - states[:-1, :, None]  # [512, S(left), S(right)]
    dk = dirs[:, None, None]
    # split tables: this range of d keeps the hi table's slopes inside int16 after the split
    smin, smax = (_SLOPE_MIN, _SLOPE_MAX) if frac_bits == 0 else ((_SLOPE_MIN + 2) * u, (_SLOPE_MAX - 1) * u)
    ok = (d >= smin) & (d <= smax) & ~((dk == 1) & (d < 0)) & ~((dk == -1) & (d > 0)) & ~((dk == 2) & (d != 0))
    segmax = np.where(ok, segmax, np.inf)
    # pass 1: bottleneck (min over paths of the max segment error)
    best = np.zeros(S)
    for k in range(n - 1):
        best = np.min(np.maximum(best[:, None], segmax[k]), axis=0)
    if not np.isfinite(best.min()):
        raise QuantizationError("no int16 table among the candidates keeps the slope limit and f's monotonicity")
    bound = float(best.min()) + 1e-9
    # pass 2: min sum of squares over paths whose every segment stays within the bound
    cost = np.where(segmax <= bound, segss, np.inf)
    acc = np.zeros(S)
    back = np.empty((n - 1, S), dtype=np.int64)
    for k in range(n - 1):
        tot = acc[:, None] + cost[k]
        back[k] = np.argmin(tot, axis=0)
        acc = tot[back[k], np.arange(S)]
    path = np.empty(n, dtype=np.int64)
    path[-1] = int(np.argmin(acc))
    for k in range(n - 2, -1, -1):
        path[k] = back[k, path[k + 1]]
    return states[np.arange(n), path]


def build_table_int16(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    out_scale: float,
    *,
    domain: tuple[float, float] | None = None,
    method: str = "minimax",
) -> np.ndarray:
    """Build the 513-entry int16 TABLE for ``f`` (TOSA 1.0 TABLE int16; zero points are 0).

    Entry ``i`` is for input code ``-32768 + 128*i`` (``i = 512``: the virtual code +32768).  The
    device computes ``v = (t[i] << 7) + (t[i+1] - t[i]) * frac`` (16.7, :func:`table_interpolate_int16`)
    and then RESCALE x 2^-7 (:data:`TABLE16_RESCALE`, half toward +infinity) to the int16 output, so
    entries are in output LSB (``f(x) / out_scale``).  ``f`` is evaluated in float64 on
    ``x = code * in_scale`` clipped to ``domain``; +-inf (poles) saturate to -32768 / 32767.

    ``method``:
      ``"sample"``   plain sampling: ``t[i] = clamp(rint(f(x_i) / out_scale))`` (round half to even).
      ``"minimax"``  (default) the least-squares continuous piecewise-linear fit of f over all 65,536
                     codes (this is the midpoint bias correction: the chord error of a curved segment is
                     split above and below f), rounded, then integer coordinate descent that lowers the
                     max error of what the device outputs (interpolation *and* the final rounding) over
                     every code.  Kept only where it beats plain sampling (it always has so far).
    Both keep a segment's entries ordered wherever f is monotone over that segment, so the table
    never breaks monotonicity of f.

    Raises:
        QuantizationError: f is NaN at some code (pass ``domain``), or two adjacent entries differ by
            more than int16 allows (TOSA's REQUIRE on the slope): the message names the segment and
            the remedy.  Never a silent wrap.
    """
    if method not in ("sample", "minimax"):
        raise ValueError(f"method must be 'sample' or 'minimax', not {method!r}")
    y, sample = _table16_target(f, in_scale, out_scale, domain)
    if method == "sample":
        return sample.astype(np.int16)
    Y, y_end = y[:-1].reshape(512, 128), float(y[-1])
    dirs = _table16_segment_directions(y[:-1], y_end)
    center = np.rint(_table16_least_squares(Y, y_end)).astype(np.int64)
    offsets = np.arange(-_TABLE16_SEARCH, _TABLE16_SEARCH + 1, dtype=np.int64)
    states = np.clip(np.concatenate([center[:, None] + offsets, sample[:, None]], axis=1), -32768, 32767)
    best = _table16_minimax(Y, states, dirs)  # the sampled table is one of the paths: never worse
    _check_slopes(best, in_scale)
    return best.astype(np.int16)


def _table16_target(f, in_scale: float, out_scale: float, domain) -> tuple[np.ndarray, np.ndarray]:
    """(f / out_scale at every code -32768..+32768 clipped to int16, plainly sampled 513 entries);
    raises the slope error of a pole/jump against the sampled function."""
    _check_out_scale(out_scale)
    codes = np.arange(-32768, 32769, dtype=np.int64)  # every code and the virtual +32768
    x = _clip_to_domain(codes * np.float64(in_scale), domain)
    y = _end_knot_inside(_eval_f64(f, x)) / np.float64(out_scale)
    _check_nan(y, codes)
    y = np.clip(y, -32768.0, 32767.0)  # +-inf saturates
    sample = np.clip(np.rint(y[::128]), -32768, 32767).astype(np.int64)
    _check_slopes(sample, in_scale)
    return y, sample


def _knot_states(center: np.ndarray, frac_bits: int, extra: np.ndarray | None = None) -> np.ndarray:
    """Candidate knots per entry around ``center`` (in 2^-frac_bits LSB): +-_TABLE16_SEARCH LSB (single)
    or +-1/2 LSB in 1/16 LSB steps (split), plus ``extra`` (e.g. the plainly sampled table)."""
    u = 1 << frac_bits
    if frac_bits == 0:
        offsets = np.arange(-_TABLE16_SEARCH, _TABLE16_SEARCH + 1, dtype=np.int64)
    else:
        offsets = np.arange(-_TABLE16_SPLIT_SEARCH, _TABLE16_SPLIT_SEARCH + 1, dtype=np.int64) * (u // 16)
    cols = [center[:, None] + offsets] + ([extra[:, None]] if extra is not None else [])
    return np.clip(np.concatenate(cols, axis=1), -32768 * u, 32767 * u)


def _term(knots: np.ndarray, zoom: int, frac_bits: int, in_scale: float) -> Table16Term:
    if frac_bits == 0:
        _check_slopes(knots, in_scale / 2**zoom)
        return Table16Term(zoom, knots.astype(np.int16))
    hi, lo = split_table_int16(knots)
    _check_slopes(hi, in_scale / 2**zoom)
    return Table16Term(zoom, hi.astype(np.int16), lo.astype(np.int16))


def build_table_int16_split(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    out_scale: float,
    *,
    domain: tuple[float, float] | None = None,
) -> Table16Plan:
    """A *split* int16 table for ``f``: 513 knots in 2^-7 output LSB (:data:`TABLE16_FRAC_BITS`) held as
    two ordinary TOSA int16 TABLEs ``hi`` and ``lo`` with ``knot = hi * 2^7 + lo``.

    Why: with one table every knot is a whole output LSB, and at the curviest segments of sigmoid and
    tanh the integer knots cost up to ~0.5 LSB on top of the chord error and the final rounding
    (int16 sigmoid +-8: 1.055 LSB max, tanh +-4: 1.216 LSB, the best any single table reaches).  Knots
    at 1/128 LSB leave essentially the chord error: sigmoid +-8 0.68 LSB, tanh +-4 0.86 LSB.

    The device runs ``TABLE(x, hi) -> RESCALE x 2^7 (int32) -> ADD TABLE(x, lo) -> RESCALE x 2^-14``
    (:class:`Table16Plan`); interpolation is linear in the table, so the sum equals interpolating the
    2^-7-LSB knots exactly.  Knots: the least-squares fit, then the exact bottleneck search of
    :func:`_table16_minimax` over +-1/2 LSB in steps of 1/16 LSB (plus the plainly sampled table, so
    never worse than sampling), monotone wherever f is.

    Returns:
        a one-term :class:`Table16Plan` (zoom 0, ``hi`` and ``lo`` int16 [513], ``lo`` in [-64, 63]).
    Raises:
        QuantizationError: as :func:`build_table_int16` (NaN, or a slope outside int16 near a pole).
    """
    j = TABLE16_FRAC_BITS
    y, sample = _table16_target(f, in_scale, out_scale, domain)
    Y, y_end = y[:-1].reshape(512, 128), float(y[-1])
    dirs = _table16_segment_directions(y[:-1], y_end)
    center = np.rint(_table16_least_squares(Y, y_end) * (1 << j)).astype(np.int64)
    knots = _table16_minimax(Y, _knot_states(center, j, sample << j), dirs, frac_bits=j)
    plan = Table16Plan((_term(knots, 0, j, in_scale),))
    table16_apply(plan, np.arange(-32768, 32768))  # raises where an intermediate breaks TOSA's REQUIRE
    return plan


def build_table_int16_zoom(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    out_scale: float,
    zoom: int,
    *,
    split: bool = True,
    domain: tuple[float, float] | None = None,
) -> Table16Plan:
    """A *zoomed* int16 table for ``f``: two terms whose sum is f.

    ``centre``: zoom ``k``, indexed by ``RESCALE x * 2^k`` (exact, saturating): f on the middle
    ``1/2^k`` of the input range with segments ``2^k`` times narrower, constant beyond (the index
    saturates).  ``rest``: zoom 0, indexed by x: ``f - centre``, zero in the middle, the tails outside.
    Where f bends most near 0 and flattens outwards (sigmoid, tanh, erf, gelu, ... over a wide
    calibrated range) the chord error drops by ~4^k in the middle and stays small in the flat tails:
    int16 tanh over +-14 goes from 5.6 LSB (one table) to about 0.8.

    The centre is fitted first on the codes it sees (multiples of 2^k), then the rest against f given
    the centre's exact device contribution, so the final rounding of the sum is what is optimised.
    ``split``: knots in 1/128 LSB (two tables per term, :func:`build_table_int16_split`).

    Raises:
        QuantizationError: as :func:`build_table_int16`, or when the terms' sum breaks int32 or TOSA's
            REQUIRE on the RESCALE x 2^7 at some code (checked on every code).
    """
    if not 1 <= zoom <= 7:
        raise ValueError(f"zoom must be in 1..7, not {zoom}")
    j = TABLE16_FRAC_BITS if split else 0
    sh = 7 + j
    codes = np.arange(-32768, 32769, dtype=np.int64)
    # centre: f at index code c' (input scale in_scale / 2^k)
    yc, sample_c = _table16_target(f, in_scale / 2**zoom, out_scale, domain)
    Yc, yc_end = yc[:-1].reshape(512, 128), float(yc[-1])
    seen = (np.arange(-32768, 32768) % (1 << zoom) == 0).reshape(512, 128)
    center = np.rint(_table16_least_squares(Yc, yc_end) * (1 << j)).astype(np.int64)
    # the plainly sampled centre is one candidate path: it always meets the direction rules
    kc = _table16_minimax(Yc, _knot_states(center, j, sample_c << j), _table16_segment_directions(yc[:-1], yc_end), j,
                          mask=seen)
    # the rest: f minus the centre's exact device contribution (including its saturated ends)
    y, _ = _table16_target(f, in_scale, out_scale, domain)
    contrib = _interp64(kc, _zoom_index(codes, zoom))  # 2^-sh LSB, every code and the virtual +32768
    resid = y - contrib / float(1 << sh)
    Y = y[:-1].reshape(512, 128)
    center = np.rint(_table16_least_squares(resid[:-1].reshape(512, 128), float(resid[-1])) * (1 << j)).astype(np.int64)
    # the rest follows f's direction on every segment; outside the centre (which is constant there)
    # that is f's monotonicity, inside it the sum of two terms that both follow f
    dirs = _table16_segment_directions(y[:-1], float(y[-1]))
    # a path that meets the rule: 0 over the centre, outside it f's sampled steps from the centre's edge
    # (edge = 32768 / 2^k is a knot: |c| <= edge is where the centre's index does not saturate)
    edge = 32768 >> zoom
    kc_codes = INT16_TABLE_CODES + 32768
    fine = np.rint(y[kc_codes] * (1 << j)).astype(np.int64)
    left, right = INT16_TABLE_CODES <= -edge, INT16_TABLE_CODES >= edge
    rest = np.zeros(513, dtype=np.int64)
    rest[left] = fine[left] - fine[INT16_TABLE_CODES == -edge][0]
    rest[right] = fine[right] - fine[INT16_TABLE_CODES == edge][0]
    ko = _table16_minimax(Y, _knot_states(center, j, rest), dirs, j, base=contrib[:-1].reshape(512, 128))
    plan = Table16Plan((_term(kc, zoom, j, in_scale), _term(ko, 0, j, in_scale)))
    table16_apply(plan, codes[:-1])  # raises where an intermediate breaks int32 or TOSA's REQUIRE
    return plan


def _monotone_where_f_is(dev: np.ndarray, y: np.ndarray, y_end: float) -> bool:
    """The device output keeps f's monotonicity on every table segment (128 codes and the next
    segment's first) over which f is monotone (:func:`_table16_segment_directions`): non-decreasing,
    non-increasing, or flat where f is (clipped) flat -- the rule the one-table search enforces on
    its knots.  Segments holding an extremum of f are free."""
    dirs = np.repeat(_table16_segment_directions(y, y_end), 128)[:-1]  # direction of pair (c, c+1)
    d = np.diff(dev.astype(np.int64))
    return bool(np.all(np.where(dirs == 1, d >= 0, np.where(dirs == -1, d <= 0, np.where(dirs == 2, d == 0, True)))))


def build_table_int16_plan(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    out_scale: float,
    *,
    domain: tuple[float, float] | None = None,
) -> Table16Plan:
    """The int16 table tabula lowers to: the cheapest :class:`Table16Plan` whose max error over every
    input code is within :data:`TABLE16_SPLIT_ABOVE_LSB` (1 output LSB), trying in order of cost

    1. one table (:func:`build_table_int16`; 2 IR ops);
    2. a split table (:func:`build_table_int16_split`) or a zoomed pair (:func:`build_table_int16_zoom`,
       zoom 1 or 2) -- 5 IR ops, the more accurate of those within the bound;
    3. a split zoomed pair (zoom 1, 2 or 3; 10 IR ops), the most accurate;
    4. a deeply zoomed pair (zoom 4 to 7, 5 ops) -- for a pole or infinite slope at x = 0;

    and, when none reaches the bound, the most accurate -- where a costlier form must cut the max
    error by 10 % over the best cheaper one (asin's edge singularity gains 1 LSB of 429 from zooming: it
    keeps one table).  A candidate counts only if it is
    exact-checked on every code: no int32 overflow, TOSA's REQUIREs hold, and its output never steps
    against f (monotone where f is).  Zero points are 0 (int16 activations are symmetric).

    Raises:
        QuantizationError: as :func:`build_table_int16` (the one-table form is always built).
    """
    codes = np.arange(-32768, 32768, dtype=np.int64)
    y, _ = _table16_target(f, in_scale, out_scale, domain)  # every code and the virtual +32768
    target, y_end = y[:-1], float(y[-1])
    scored: list[tuple[float, Table16Plan]] = []

    def score(plan: Table16Plan) -> float | None:
        try:
            dev = table16_apply(plan, codes)
        except QuantizationError:
            return None
        if not _monotone_where_f_is(dev, target, y_end):
            return None
        return float(np.abs(dev - target).max())

    def consider(plans) -> Table16Plan | None:
        tier = []
        for make in plans:
            try:
                plan = make()
            except QuantizationError:
                continue
            e = score(plan)
            if e is not None:
                tier.append((e, plan))
        scored.extend(tier)
        tier.sort(key=lambda t: t[0])
        return tier[0][1] if tier and tier[0][0] <= TABLE16_SPLIT_ABOVE_LSB else None

    single = Table16Plan((Table16Term(0, build_table_int16(f, in_scale, out_scale, domain=domain)),))
    e1 = score(single)
    if e1 is None or e1 <= TABLE16_SPLIT_ABOVE_LSB:
        return single
    scored.append((e1, single))
    tiers = [
        [lambda: build_table_int16_split(f, in_scale, out_scale, domain=domain)]
        + [lambda k=k: build_table_int16_zoom(f, in_scale, out_scale, k, split=False, domain=domain) for k in (1, 2)],
        [lambda k=k: build_table_int16_zoom(f, in_scale, out_scale, k, domain=domain) for k in (1, 2, 3)],
        # a pole or an infinite slope at 0 (log, sqrt, rsqrt, reciprocal): a deep centre
        [lambda k=k: build_table_int16_zoom(f, in_scale, out_scale, k, split=False, domain=domain) for k in (4, 5, 6, 7)],
    ]
    for tier in tiers:
        chosen = consider(tier)
        if chosen is not None:
            return chosen
    # none within 1 LSB: from the cheapest up, a costlier form must cut the max error by 10 %
    scored.sort(key=lambda t: (t[1].n_ops, t[0]))
    e, choice = scored[0]
    for e2, plan in scored[1:]:
        if e2 < 0.9 * e:
            e, choice = e2, plan
    return choice


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
    qmin, qmax = DTYPE_RANGE[dtype]
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
