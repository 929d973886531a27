"""The integer softmax in the form an Ethos-U55/U65 runs (no INTDIV, REDUCE_MAX on the input dtype, no
TILE): the plan, the exact integer arithmetic of its op sequence and the build-time proofs.

The exps are :mod:`tabula.qmath.softmax`'s (the same knots, so ``e`` and the row sum ``S`` are the CPU
form's to the bit); what differs is around them:

1. ``m = REDUCE_MAX(x)`` on the int8 / int16 input (the RESCALE to int32 is monotone, so the maximum
   commutes with it: Vela's U55 REDUCE_MAX takes int8 -> int8 and int16 -> int16 only), then
   ``d = SUB(RESCALE(x), RESCALE(m))`` with the row broadcast (TILE costs Vela one copy per element).
2. int8: ``idx = RESCALE(d, x1, output_zp 127)`` maps d in [-255, 0] onto the int8 codes exactly and
   three int8 TABLEs give the balanced base-256 digits of the 23-bit knot ``e = A[d]``:
   ``e = RESCALE(T2[idx], x2^16) + RESCALE(T1[idx], x2^8) + RESCALE(T0[idx], x1)`` (the U55 runs int8
   TABLEs natively; int16 ones are emulated with several LUT passes).  int16 inputs keep the CPU form's
   two-level int16 TABLE exps.
3. ``S = REDUCE_SUM(e)`` lies in ``[e(0), C e_max]`` (the row's maximum contributes ``e(0)``).  The
   reciprocal ``r ~ 2^P / S`` starts from the minimax line ``r0 = a - round(S b / 2^k)`` over that
   interval and takes ``steps`` Newton-Raphson steps in int32, each ``t = MUL(S, r, P - 29)``
   (``~ 2^29 S r / 2^P``), ``u = SUB(2^30, t)``, ``r = MUL(r, u, 29)``: the relative error squares
   every step (``x' = x (2 - x)`` for ``x = S r / 2^P``) plus at most ``2^-30 (1 + eps) + C / 2^31``
   of rounding.
4. ``n = MUL(e, r, P - 30) ~ 2^30 e / S`` (row broadcast) and ``y = RESCALE(n, Q 2^-30) + zero point``
   with ``Q = 1 / out_scale``: the rounded quotient, one rounding.

Every rounded value of the sequence is >= 0 (e, S, r, t, u, n), so half-up and half-away-from-zero
rounding agree on them.  Error bound (proved at build time over every ``S`` the row can have):
``|y - Q p| <= 1/2 + Q eps_r + Q 2^-30 + Q C eps / e(0)`` with ``eps_r`` the reciprocal's proven relative
error after the last step and ``eps`` the exps' largest error (as the CPU form's bound).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import dtypes
from ..errors import QuantizationError
from .scaling import apply_scale_32_round_half_up, quantize_multiplier
from .softmax import SOFTMAX_INDEX_MIN, SoftmaxPlan, build_softmax_plan, softmax_exp

__all__ = ["SoftmaxNpuPlan", "build_softmax_npu_plan", "softmax_npu_apply", "exp_digit_tables", "NPU_MAX_STEPS",
           "recip_target"]

#: Newton-Raphson steps the NPU softmax may take (a row of 4,000 needs 15 from its minimax line).
NPU_MAX_STEPS = 24
_I32_MAX = (1 << 31) - 1
#: The reciprocal's relative error the steps aim below, per output dtype (0.01 output LSB), unless the
#: rounding noise of a step (``(1 + eps) 2^-30 + C e_max / (e(0) 2^31)``, long int16 rows) is larger.
_TARGET = {"int8": 0.01 / 256, "int16": 0.01 / 32767}


def recip_target(dtype: str) -> float:
    """The reciprocal's relative error the Newton-Raphson steps go below (0.01 output LSB of ``dtype``)."""
    return _TARGET[dtype]


@dataclass(frozen=True)
class SoftmaxNpuPlan:
    """The constants of the NPU softmax sequence (module docstring) and what is proved about it.

    ``base``: the CPU form's plan (exp knots, ``e_max``; its division constants are not used);
    ``s_min`` / ``s_max``: the row sum's range ``[e(0), C e_max]``; ``p``: the reciprocal's scale
    ``r ~ 2^p / S``; ``r0_a``, ``r0_b``, ``r0_shift``: ``r0 = r0_a - round(S r0_b / 2^r0_shift)``;
    ``steps``: Newton-Raphson steps; ``out_scale``: (multiplier, shift) of ``y``'s RESCALE (``Q 2^-30``);
    ``recip_error``: the proven ``max |S r / 2^p - 1|`` after the last step; ``error_bound_lsb``:
    ``|y - Q p|`` in output LSB (before saturation)."""

    base: SoftmaxPlan
    s_min: int
    s_max: int
    p: int
    r0_a: int
    r0_b: int
    r0_shift: int
    steps: int
    out_scale: tuple[int, int]
    recip_error: float
    error_bound_lsb: float

    @property
    def dtype(self) -> str:
        return self.base.dtype

    @property
    def row_len(self) -> int:
        return self.base.row_len


def exp_digit_tables(plan: SoftmaxPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three int8 TABLEs (256 entries each, int8) holding the balanced base-256 digits of the int8
    form's exp knots: entry ``d + 255`` (the input code ``idx = d + 127``) of ``(T2, T1, T0)`` gives
    ``A[d] = T2 * 2^16 + T1 * 2^8 + T0`` for every d in [-255, 0]."""
    if plan.two_level or plan.dtype != "int8":
        raise QuantizationError("the int8 exp digit tables are for the one-level int8 softmax")
    d = np.arange(-255, 1, dtype=np.int64)
    v = plan.exp_hi[np.maximum(d, SOFTMAX_INDEX_MIN) - SOFTMAX_INDEX_MIN]
    lo = ((v + 128) & 255) - 128
    v1 = (v - lo) >> 8
    mid = ((v1 + 128) & 255) - 128
    hi = (v1 - mid) >> 8
    if hi.min() < -128 or hi.max() > 127:
        raise QuantizationError("softmax exp knot does not fit three int8 digits")
    return hi.astype(np.int8), mid.astype(np.int8), lo.astype(np.int8)


def _mul(a, b, shift: int):
    """TOSA MUL with shift: ``(a b + 2^(shift-1)) >> shift`` (half toward +inf), exact int64 / Python ints."""
    p = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    return (p + (np.int64(1) << np.int64(shift - 1))) >> np.int64(shift) if shift > 0 else p


def _recip_steps(plan: SoftmaxNpuPlan, s: np.ndarray) -> np.ndarray:
    """``r`` after the line and the Newton-Raphson steps, for row sums ``s`` (int64), as the ops compute."""
    s = np.asarray(s, dtype=np.int64)
    r = np.int64(plan.r0_a) - _mul(s, plan.r0_b, plan.r0_shift)
    for _ in range(plan.steps):
        t = _mul(s, r, plan.p - 29)
        r = _mul(r, np.int64(1 << 30) - t, 29)
    return r


def softmax_npu_apply(plan: SoftmaxNpuPlan, x: np.ndarray, axis: int = -1) -> np.ndarray:
    """What the NPU op sequence computes: the softmax of the integer tensor ``x`` (``plan.dtype``) along
    ``axis`` (of length ``plan.row_len``), as ``plan.dtype`` codes of the output grid.

    Raises:
        ValueError: the axis is not ``plan.row_len`` long.
        QuantizationError: an intermediate leaves the range the plan proved (never for its own rows).
    """
    x = np.asarray(x)
    if x.shape[axis] != plan.row_len:
        raise ValueError(f"softmax plan is for rows of {plan.row_len}, the axis has {x.shape[axis]}")
    xi = x.astype(np.int64)
    d = xi - xi.max(axis=axis, keepdims=True)
    e = softmax_exp(plan.base, d)
    s = e.sum(axis=axis, keepdims=True)
    r = _recip_steps(plan, s)
    n = _mul(e, r, plan.p - 30)
    if s.max() > _I32_MAX or r.max() > _I32_MAX or r.min() < 1 or n.max() > _I32_MAX:
        raise QuantizationError("softmax (NPU form): an intermediate leaves the range the plan proved")
    lo, hi = dtypes.range_of(plan.dtype)
    y = apply_scale_32_round_half_up(n, *plan.out_scale) + plan.base.out_zero_point
    return np.clip(y, lo, hi).astype(dtypes.get(plan.dtype).np)


def _line(s_min: int, s_max: int, p: int) -> tuple[int, int, int]:
    """``(a, b, k)`` of the integer minimax line ``r0 = a - round(S b / 2^k)`` of ``2^p / S`` on
    [s_min, s_max] (relative error ``(c-1)^2 / ((1+c)^2 + 4c)``, c = s_max / s_min)."""
    c = s_max / s_min
    beta = 8.0 / ((1.0 + c) ** 2 + 4.0 * c)
    a = round(2.0**p / s_min * beta * (1.0 + c))
    b_real = 2.0**p * beta / (s_min * float(s_min))
    k = 0
    while b_real * 2.0 ** (k + 1) < (1 << 30) and k < 62:
        k += 1
    return a, round(b_real * 2.0**k), k


def _line_error(s_min: int, s_max: int, p: int, a: int, b: int, k: int) -> float:
    """``max |S r0 / 2^p - 1|`` over S in [s_min, s_max] with ``r0 = a - S b / 2^k`` (exact rationals at the
    ends and the vertex of the parabola) plus the rounding of ``S b / 2^k`` (half a unit of r0)."""
    def x(s):
        return Fraction(s) * (Fraction(a) - Fraction(s * b, 1 << k)) / (1 << p)

    pts = [s_min, s_max]
    vertex = Fraction(a << k, 2 * b) if b else None
    if vertex is not None and s_min < vertex < s_max:
        pts += [math.floor(vertex), math.ceil(vertex)]
    worst = max(abs(float(x(s)) - 1.0) for s in pts)
    return worst + s_max / 2.0 ** (p + 1)


def build_softmax_npu_plan(in_scale: float, dtype: str, row_len: int, out_scale: float,
                           out_zero_point: int) -> SoftmaxNpuPlan:
    """The NPU form of the integer softmax of rows of ``row_len`` codes of a ``dtype`` tensor of scale
    ``in_scale`` onto ``(out_scale, out_zero_point)``: the CPU form's exps (:func:`build_softmax_plan`)
    and a reciprocal with every range and the error bound proved over every row sum.

    Raises:
        QuantizationError: as :func:`build_softmax_plan` (bad scales, dtype, row length); or a row so
            long that :data:`NPU_MAX_STEPS` Newton-Raphson steps do not reach the target error (the
            CPU form then stays: its INTDIV runs on the CPU).
    """
    base = build_softmax_plan(in_scale, dtype, row_len, out_scale, out_zero_point)
    d_all = np.arange(-(255 if dtype == "int8" else 65535), 1, dtype=np.int64)
    e_all = softmax_exp(base, d_all)
    s_min, e_max = int(e_all[-1]), int(e_all.max())
    s_max = row_len * e_max
    c = s_max / s_min
    eps0_real = (c - 1.0) ** 2 / ((1.0 + c) ** 2 + 4.0 * c)
    # r <= (1 + eps) 2^p / s_min stays under 2^30.5: every MUL result then fits int32
    p = int(math.floor(math.log2(s_min) + 30.0 - math.log2(1.0 + eps0_real) - 0.5))
    a, b, k = _line(s_min, s_max, p)
    eps = _line_error(s_min, s_max, p, a, b, k)
    if not eps < 1.0:
        raise QuantizationError(f"softmax (NPU form) over rows of {row_len}: the reciprocal's first guess does not "
                                "converge")
    r_top = (1.0 + eps) * 2.0**p / s_min
    steps = 0
    floor_noise = (1.0 + eps) * 2.0**-30 + s_max / 2.0 ** (p + 1)
    # below the rounding noise the steps gain nothing: aim at the larger of the two
    target = max(_TARGET[dtype], 2.0 * floor_noise)
    while eps > target and steps < NPU_MAX_STEPS:
        eps = eps * eps + (1.0 + eps) * 2.0**-30 + s_max / 2.0 ** (p + 1)
        r_top = max(r_top, (1.0 + eps) * 2.0**p / s_min)
        steps += 1
    if eps > target:
        raise QuantizationError(f"softmax (NPU form) over rows of {row_len}: {NPU_MAX_STEPS} Newton-Raphson steps do "
                                f"not bring the reciprocal within {target:.2g} (reached {eps:.2g})")
    if r_top >= 2.0**31 - 1 or p - 30 < 0 or p > 90 or a >= _I32_MAX or b >= _I32_MAX:
        raise QuantizationError(f"softmax (NPU form) over rows of {row_len}: the reciprocal leaves int32")
    q_real = 1.0 / out_scale
    out_mult, out_shift = quantize_multiplier(q_real * 2.0**-30)
    mu = abs(out_mult * 2.0**-out_shift / (q_real * 2.0**-30) - 1.0)
    eps_exp = float(np.abs(e_all.astype(np.float64) - s_min * np.exp(in_scale * d_all.astype(np.float64))).max())
    bound = 0.5 + q_real * (eps + mu) * (1.0 + eps) + q_real * 2.0**-30 + q_real * row_len * eps_exp / s_min
    plan = SoftmaxNpuPlan(base=base, s_min=s_min, s_max=s_max, p=p, r0_a=int(a), r0_b=int(b), r0_shift=int(k),
                          steps=steps, out_scale=(out_mult, out_shift), recip_error=eps, error_bound_lsb=bound)
    # the bound is analytic; check its premises on the row sums that matter: the ends and every power of 2
    probe = np.unique(np.clip(np.concatenate([[s_min, s_max], 1 << np.arange(0, 31, dtype=np.int64),
                                              np.linspace(s_min, s_max, 4097).astype(np.int64)]), s_min, s_max))
    r = _recip_steps(plan, probe)
    rel = np.abs(probe.astype(np.float64) * r.astype(np.float64) / 2.0**p - 1.0)
    if r.min() < 1 or r.max() > _I32_MAX or rel.max() > eps * (1 + 1e-9) + 1e-15:
        raise QuantizationError(f"softmax (NPU form) over rows of {row_len}: the reciprocal's proof failed on a probe")
    return plan
