"""Integer softmax from TOSA-style ops: the plan (exp tables, shifts, multipliers), the exact integer
arithmetic the op sequence computes, and the build-time proofs of its integer ranges and error bound.

Softmax of one row ``x`` (``C`` codes of scale ``s``) is ``p_i = exp(s d_i) / sum_j exp(s d_j)`` with
``d = x - max(x)`` in [-R, 0] (R = 255 for int8, 65535 for int16; the input zero point cancels).  The
op sequence (:mod:`tabula.lowering.ops.softmax` emits it, codegen fuses it into one kernel):

1. ``d = SUB(x, TILE(REDUCE_MAX(x)))`` in int32.
2. exp of ``d`` in fixed point, ``e ~ E exp(s d)`` with ``E = e(0)``, looked up at the exact knots of
   int16 TABLEs (index a multiple of 128: no interpolation error).  Knots hold 23-bit values
   ``hi * 2^7 + lo`` in two TABLEs (``TABLE(idx, hi) + RESCALE(TABLE(idx, lo), x 2^-7)``).
   *One level* (int8; int16 at scales >= 0.087): ``e = A[max(d, -256)]``, ``A[a] = round(E exp(s a))``.
   *Two levels* (int16, 65,536 values of d): ``a = round_half_up(d / K)``, ``b = d - K a`` in
   [-K/2, K/2), ``e = round(A[a] B[b] / 2^sh)`` (TOSA MUL with shift) with ``A[a] ~ exp(s K a)`` and
   ``B[b] ~ exp(s b)``; ``K = 2^k <= 256`` is the smallest that lets 256 steps of ``K`` reach below the
   sum's resolution (``a < -256`` saturates the index onto A[-256], where exp is < 2^-32).
3. ``S = REDUCE_SUM(e)``: the row length fixes ``E`` (one level) or ``sh`` (two levels) so that
   ``C e_max <= 2^31 - 1``: a row of C elements leaves each exp about 31 - log2(C) bits, which is what
   limits the row length (:data:`SOFTMAX_MAX_ROW`).
4. ``q = INTDIV(N + H, D)`` with ``N = MUL(e, Qc, shN) ~ e Q / lam``, ``D = RESCALE(S, 1/lam)``,
   ``H = RESCALE(S, 1/(2 lam)) ~ D / 2`` (a rounding division), ``Q = 1 / out_scale``; ``lam`` is the
   smallest scale that keeps ``N + H`` in int32 and ``D`` under TOSA's RESCALE REQUIRE.
5. ``y = RESCALE(q, x 1) + out_zero_point``, saturated to the output dtype.

Error bound (proved at build time, :attr:`SoftmaxPlan.error_bound_lsb`): with ``eps`` the largest
``|e(d) - E exp(s d)|`` over every d (enumerated), ``|q - Q p| <= 1/2 + Delta + Q C eps / E`` where
``Delta`` covers the rounding of N, H and D.  Below 1.5 LSB, the output is within 1 LSB of
``round(Q p)`` -- of PyTorch's ``q(softmax(dq(x)))`` up to PyTorch's own float32 error.

All arithmetic is exact integer numpy; :func:`softmax_apply` is what the device computes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import dtypes
from ..errors import QuantizationError
from .scaling import apply_scale_32_round_half_up, quantize_multiplier
from .table16 import split_table_int16

__all__ = ["SoftmaxPlan", "build_softmax_plan", "softmax_exp", "softmax_apply", "softmax_row_limit",
           "knot_tables_int16", "softmax_too_long", "SOFTMAX_KNOT_MAX", "SOFTMAX_INDEX_MIN",
           "SOFTMAX_MAX_SPLIT_BITS", "SOFTMAX_ERROR_LIMIT_LSB", "SOFTMAX_MAX_ROW"]

#: Largest knot a pair of int16 TABLEs holds as ``hi * 2^7 + lo`` (``hi <= 32767``, ``lo`` in [-64, 63]).
SOFTMAX_KNOT_MAX = 32767 * 128 + 63

#: The exp tables' first index: ``a = -256`` sits at TABLE entry 0 (input code -32768), ``a = 0`` at 256.
SOFTMAX_INDEX_MIN = -256

#: ``K = 2^k`` of the two-level exp is at most 256: 256 steps of 256 cover every int16 difference.
SOFTMAX_MAX_SPLIT_BITS = 8

#: The proven error bound (vs the exact softmax, in output LSB of the int8 grid; int16 bounds scaled by
#: 2^-7) stays below this for every row tabula takes: beyond it an int8 output could be 2 LSB off.
SOFTMAX_ERROR_LIMIT_LSB = 1.49

#: The longest rows (softmax axis lengths) tabula takes: the error bound reaches
#: :data:`SOFTMAX_ERROR_LIMIT_LSB` a little beyond them at the worst input scale (int8 4,075 at 2^-5, int16
#: 2,896 at 1e-7: the int32 sum of C exps leaves each 31 - log2(C) bits).
SOFTMAX_MAX_ROW = {"int8": 4000, "int16": 2048}

_I32_MAX = (1 << 31) - 1
_SPAN = {"int8": 255, "int16": 65535}  # largest max(x) - x of a row
#: B's largest knot, as a fraction of the largest a TABLE pair holds: not a power of two, so that the
#: rounding of ``A B / 2^sh`` does not meet A's own rounding at ties (a ratio of exactly 1/2 rounded
#: every odd A down: a bias that adds up over a long row).
_B_TOP = math.sqrt(0.5)
_SATURATION_LOG = math.log(2.0**32)  # E exp(-this) < 1/2 for every E < 2^31


@dataclass(frozen=True)
class SoftmaxPlan:
    """How one softmax op is computed (the constants of its op sequence) and what is proved about it.

    ``exp_hi``: int64 [257], the knots of A for a = -256..0; ``exp_lo``: int64 [K] knots of B for
    b = -K/2..K/2-1 (two levels) or None (one level); ``split_bits`` = k (K = 2^k, two levels);
    ``exp_shift``: the MUL shift of ``A B`` (two levels).  ``q_mult``/``q_shift``: the MUL giving N;
    ``d_scale`` / ``h_scale``: (multiplier, shift) of the RESCALEs giving D and H.
    ``e_max``: the largest exp value (``e(0)``, or a rounding above it at tiny scales);
    ``error_bound_lsb``: |output - Q p| <= this (before saturation), in output LSB."""

    dtype: str
    row_len: int
    in_scale: float
    out_scale: float
    out_zero_point: int
    exp_hi: np.ndarray
    exp_lo: np.ndarray | None
    split_bits: int
    exp_shift: int
    q_mult: int
    q_shift: int
    d_scale: tuple[int, int]
    h_scale: tuple[int, int]
    e_max: int
    error_bound_lsb: float

    @property
    def two_level(self) -> bool:
        return self.exp_lo is not None


def knot_tables_int16(knots: np.ndarray, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Two 513-entry int16 TABLEs holding ``knots`` (int64, each in [0, SOFTMAX_KNOT_MAX]) as
    ``hi * 2^7 + lo`` from entry ``first`` on (entry j is TOSA input code ``-32768 + 128 j``); the
    entries before and after repeat the end knots (flat: every slope fits int16)."""
    k = np.asarray(knots, dtype=np.int64)
    full = np.empty(513, dtype=np.int64)
    full[:first] = k[0]
    full[first:first + k.size] = k
    full[first + k.size:] = k[-1]
    hi, lo = split_table_int16(full)
    return hi.astype(np.int16), lo.astype(np.int16)


def _knots(scale: float, values: np.ndarray) -> np.ndarray:
    """``round(scale * exp(values))`` (half to even) as int64, exp in float64."""
    return np.rint(scale * np.exp(np.asarray(values, dtype=np.float64))).astype(np.int64)


def _mul_shift(p: np.ndarray, shift: int) -> np.ndarray:
    """TOSA MUL's rounding: ``(p + 2^(shift-1)) >> shift`` (half toward +infinity), or p for shift 0."""
    p = np.asarray(p, dtype=np.int64)
    return (p + (np.int64(1) << np.int64(shift - 1))) >> np.int64(shift) if shift > 0 else p


def softmax_exp(plan: SoftmaxPlan, d: np.ndarray) -> np.ndarray:
    """The fixed-point exp ``e(d)`` the op sequence computes for differences ``d = x - max`` (int,
    in [-R, 0]), as int64 -- the exact integer arithmetic of its TABLE / RESCALE / ADD / MUL ops."""
    d = np.asarray(d, dtype=np.int64)
    if not plan.two_level:
        return plan.exp_hi[np.maximum(d, SOFTMAX_INDEX_MIN) - SOFTMAX_INDEX_MIN]
    k = plan.split_bits
    a = apply_scale_32_round_half_up(d, 1 << 30, 30 + k)  # round_half_up(d / 2^k)
    b = d - (a << np.int64(k))
    a_val = plan.exp_hi[np.maximum(a, SOFTMAX_INDEX_MIN) - SOFTMAX_INDEX_MIN]
    b_val = plan.exp_lo[b + ((1 << k) >> 1)]
    return _mul_shift(a_val * b_val, plan.exp_shift)


def softmax_apply(plan: SoftmaxPlan, x: np.ndarray, axis: int = -1) -> np.ndarray:
    """What the device computes: the softmax of the integer tensor ``x`` (``plan.dtype``) along
    ``axis`` (of length ``plan.row_len``), as ``plan.dtype`` codes of the output grid.

    Raises:
        QuantizationError: a value breaks a range the plan proved (never for the plan's own dtype
            and row length).
    """
    x = np.asarray(x)
    if x.shape[axis] != plan.row_len:
        raise ValueError(f"softmax plan is for rows of {plan.row_len}, the axis has {x.shape[axis]}")
    xi = x.astype(np.int64)
    d = xi - xi.max(axis=axis, keepdims=True)
    e = softmax_exp(plan, d)
    s = e.sum(axis=axis, keepdims=True)
    n = _mul_shift(e * plan.q_mult, plan.q_shift)
    den = apply_scale_32_round_half_up(s, *plan.d_scale)
    half = apply_scale_32_round_half_up(s, *plan.h_scale)
    num = n + half
    if s.max() > _I32_MAX or num.max() > _I32_MAX or den.min() < 1:
        raise QuantizationError("softmax: an intermediate leaves the range the plan proved")
    q = num // den  # both >= 0: INTDIV's truncation is a floor
    lo, hi = dtypes.range_of(plan.dtype)
    return np.clip(q + plan.out_zero_point, lo, hi).astype(dtypes.get(plan.dtype).np)


def _exp_tables(in_scale: float, dtype: str, row_len: int) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(A knots [257], B knots [K] or None, k).  One level -- ``A[a] = E exp(s a)`` with the largest E
    the row allows -- for int8, and for int16 when 256 steps of one code already reach exp(s d) below
    2^-32 (differences beyond saturate onto A[-256]); otherwise two levels, ``A[a] = KNOT_MAX exp(s K a)``
    and ``B[b] ~ exp(s b)``, with the smallest K = 2^k that reaches that far (or covers every int16
    difference)."""
    s = float(in_scale)
    a = np.arange(SOFTMAX_INDEX_MIN, 1, dtype=np.int64)
    k = 0
    if dtype == "int16":
        while k < SOFTMAX_MAX_SPLIT_BITS and s * (1 << k) * (-SOFTMAX_INDEX_MIN - 0.5) < _SATURATION_LOG:
            k += 1
    if k == 0:
        return _knots(min(SOFTMAX_KNOT_MAX, _I32_MAX // row_len), s * a), None, 0
    big_k = 1 << k
    b = np.arange(-(big_k >> 1), big_k - (big_k >> 1), dtype=np.int64)
    a_knots = _knots(SOFTMAX_KNOT_MAX, s * big_k * a)
    b_knots = np.minimum(_knots(SOFTMAX_KNOT_MAX * _B_TOP, s * (b - b[-1])), SOFTMAX_KNOT_MAX)
    return a_knots, b_knots, k


class _TooLong(Exception):
    """The row is too long for the int32 sum (``bound`` None) or for the error limit."""

    def __init__(self, bound: float | None = None):
        super().__init__(bound)
        self.bound = bound


def softmax_row_limit(dtype: str) -> int:
    """The longest softmax row (axis length) tabula takes in ``dtype``: :data:`SOFTMAX_MAX_ROW`."""
    return SOFTMAX_MAX_ROW[dtype]


def build_softmax_plan(in_scale: float, dtype: str, row_len: int, out_scale: float, out_zero_point: int) -> SoftmaxPlan:
    """The integer softmax of rows of ``row_len`` codes of a ``dtype`` tensor of scale ``in_scale``
    onto the output grid ``(out_scale, out_zero_point)`` (same dtype): every constant of the op
    sequence (module docstring), each integer range proved over every possible row (every difference
    d is enumerated), and the error bound.

    Raises:
        QuantizationError: a non-positive or non-finite scale, a dtype other than int8/int16, an empty
            row, or a row longer than :data:`SOFTMAX_MAX_ROW` (the int32 sum of its exps would leave
            too little resolution for the error limit): the message names the limit and what to do.
    """
    if dtype not in _SPAN:
        raise QuantizationError(f"softmax is int8 or int16, not {dtype}")
    for name, v in (("input scale", in_scale), ("output scale", out_scale)):
        if not (math.isfinite(v) and v > 0):
            raise QuantizationError(f"softmax {name} {v!r} is not a positive finite number")
    if row_len < 1:
        raise QuantizationError(f"softmax over an empty axis ({row_len} elements)")
    if out_scale < 2.0**-28:
        raise QuantizationError(f"softmax output scale {out_scale!r} is finer than 2^-28: its quotient would leave the "
                                "final RESCALE's range; use the fixed softmax grid (tabula.rules.SOFTMAX_GRID)")
    try:
        if row_len > SOFTMAX_MAX_ROW[dtype]:
            raise _TooLong()
        return _plan(float(in_scale), dtype, int(row_len), float(out_scale), int(out_zero_point))
    except _TooLong as e:
        raise QuantizationError(softmax_too_long(dtype, int(row_len), e.bound)) from None


def softmax_too_long(dtype: str, row_len: int, bound: float | None = None) -> str:
    """The message for a softmax row longer than tabula takes: what is wrong and what to do."""
    why = f" (its error bound would be {bound:.2f} output LSB)" if bound is not None else ""
    return (f"softmax over rows of {row_len} elements in {dtype}{why}: the int32 sum of that many exps leaves each "
            f"too few bits; tabula's integer softmax takes rows of at most {SOFTMAX_MAX_ROW[dtype]} elements in "
            f"{dtype}. Shorten the softmax dimension (e.g. pool or slice the logits before the softmax)")


def _plan(s: float, dtype: str, c: int, out_scale: float, out_zp: int) -> SoftmaxPlan:
    q_real = 1.0 / out_scale
    a_knots, b_knots, k = _exp_tables(s, dtype, c)
    plan = SoftmaxPlan(dtype=dtype, row_len=c, in_scale=s, out_scale=out_scale, out_zero_point=out_zp, exp_hi=a_knots,
                       exp_lo=b_knots, split_bits=k, exp_shift=0, q_mult=0, q_shift=2, d_scale=(0, 2), h_scale=(0, 2),
                       e_max=0, error_bound_lsb=0.0)
    d_all = np.arange(-_SPAN[dtype], 1, dtype=np.int64)
    if b_knots is not None:  # the MUL shift that keeps C * e_max in int32
        top = int(a_knots.max()) * int(b_knots.max())
        sh = max(0, int(math.floor(math.log2(top * c / _I32_MAX))) - 1) if top * c > _I32_MAX else 0
        while c * int(softmax_exp(replace(plan, exp_shift=sh), d_all).max()) > _I32_MAX:
            sh += 1
        plan = replace(plan, exp_shift=sh)
    e_all = softmax_exp(plan, d_all)
    e_max, e0 = int(e_all.max()), int(e_all[-1])
    s_max = c * e_max
    if s_max > _I32_MAX or e0 < 1:
        raise _TooLong()
    # the division's scale lam: N + H in int32, D and H under RESCALE's REQUIRE |S| < 2^(shift-1)
    lam = e_max * max((q_real + c / 2.0) / (_I32_MAX - 8), c / float((1 << 30) - 8)) * (1 + 2.0**-24)
    for _ in range(400):
        q_mult, q_shift = quantize_multiplier(q_real / lam)
        d_scale, h_scale = quantize_multiplier(1.0 / lam), quantize_multiplier(0.5 / lam)
        n_max = int(_mul_shift(np.int64(e_max) * q_mult, q_shift))
        h_max = int(apply_scale_32_round_half_up(s_max, *h_scale))
        d_min = int(apply_scale_32_round_half_up(e0, *d_scale))
        if (n_max + h_max <= _I32_MAX and s_max < (1 << (d_scale[1] - 1)) and h_scale == (d_scale[0], d_scale[1] + 1)
                and d_min >= 1 and 1 <= q_shift <= 62 and (n_max + h_max) // d_min < (1 << 29)):  # y: RESCALE's REQUIRE
            break
        lam *= 1 + 2.0**-12
    else:
        raise _TooLong()
    plan = replace(plan, q_mult=q_mult, q_shift=q_shift, d_scale=d_scale, h_scale=h_scale, e_max=e_max)
    bound = _error_bound(plan, e_all, d_all, q_real)
    if bound >= SOFTMAX_ERROR_LIMIT_LSB * (1.0 if dtype == "int8" else 32767 / 256):
        raise _TooLong(bound)
    return replace(plan, error_bound_lsb=bound)


def _error_bound(plan: SoftmaxPlan, e_all: np.ndarray, d_all: np.ndarray, q_real: float) -> float:
    """``1/2 + Delta + Q C eps / e(0)`` (module docstring), in output LSB: eps over every d;
    ``Delta = Q |rho - 1| + (1 + (Q rho + 1/2) / 2) / (D0 - 1/2)`` for the roundings of N, H and D,
    ``rho`` the ratio of N's and D's scales (1 up to the multipliers' rounding), ``D0 = e(0) / lam``."""
    e0 = float(e_all[-1])
    eps = float(np.abs(e_all.astype(np.float64) - e0 * np.exp(plan.in_scale * d_all.astype(np.float64))).max())
    lam_n = q_real * 2.0**plan.q_shift / plan.q_mult
    lam_d = 2.0 ** plan.d_scale[1] / plan.d_scale[0]
    rho = lam_d / lam_n
    d0 = e0 / lam_d
    delta = q_real * abs(rho - 1) + (1.0 + (q_real * rho + 0.5) / 2) / (d0 - 0.5)
    return 0.5 + delta + q_real * plan.row_len * eps / e0
