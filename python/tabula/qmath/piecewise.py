"""Exact int16 plans for the piecewise-linear activations (leaky_relu, hardsigmoid, hardswish and elu's
linear part): sums of clamped ramps (:class:`~tabula.qmath.table16.Ramp16`, TOSA CLAMP + RESCALE) in
one int32 accumulator, so the only rounding that matters is the final RESCALE to int16 -- the result
is ``q(f(dq(x)))`` up to that single rounding (half toward +infinity where PyTorch rounds half to
even, and a few 2^-14 LSB of fixed-point error), with no table and no kink missed.

Why ramps: on the integer input codes, a continuous piecewise-linear f (kinks at real points r) is
piecewise linear with integer breakpoints ``floor(r)`` and ``ceil(r)``, so

    f(c) = f(n_0) + sum_j s_j * (clamp(c, n_j, n_j+1) - n_j)

with s_j the slope between consecutive breakpoints (one code wide around a kink).  Each term is a
CLAMP of x and a RESCALE by s_j (a negative slope is subtracted); the constants gather into one ramp
whose CLAMP bounds are equal.  int8 keeps its TABLE: 256 entries are ``q(f(dq(c)))`` exactly.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import QuantizationError
from .scaling import quantize_multiplier
from .table16 import Ramp16, Table16Plan, Table16Product, table16_apply

__all__ = ["EXACT_INT16", "STEPS_INT16", "MAX_STEPS", "build_piecewise_int16", "ramps_for", "step_codes"]

#: The piecewise-constant table ops whose int16 form is one ramp per step (``rules.TABLE`` names).
STEPS_INT16 = frozenset({"aten.sign", "aten.round", "aten.ceil", "aten.floor"})

#: The table ops whose int16 form is exact integer arithmetic here (the aten names of ``rules.TABLE``).
EXACT_INT16 = frozenset({"aten.leaky_relu", "aten.hardsigmoid", "aten.hardswish", "aten.elu"}) | STEPS_INT16

#: Accumulator fraction bits of a ramp plan (2^-14 output LSB, as a split table's), lowered when the
#: ramps would not fit int32.
_FRAC_BITS = 14


#: The most steps an int16 step plan takes (one ramp each: a CLAMP, a RESCALE and an ADD per element in
#: the fused kernel): floor over +-127 has 255.
MAX_STEPS = 256

#: hardswish: hardsigmoid is summed in 2^-_HS_BITS units, and the product x * hs keeps 2^-(_HS_BITS -
#: _HS_MUL_SHIFT) of them (both inside int32 for every int16 x).
_HS_BITS, _HS_MUL_SHIFT = 29, 14


def _arg(args, kwargs, i: int, name: str, default: float) -> float:
    if len(args) > i:
        return float(args[i])
    return float(kwargs.get(name, default))


def ramps_for(g: Callable[[np.ndarray], np.ndarray], kinks, bits: int) -> tuple[Ramp16, ...]:
    """The ramps whose sum is ``round(g(c) * 2^bits)`` (up to one unit per ramp) on every int16 code c,
    for a continuous ``g`` (float64 on int16 codes as float64, in output units) linear between the real
    code positions ``kinks``.

    Raises:
        QuantizationError: a ramp would not fit a TOSA RESCALE int16 -> int32 (|value| >= 2^30 or a
            shift below what TOSA's REQUIRE needs for its clamp range).
    """
    pts = {-32768, 32767}
    for r in kinks:
        if -32768 < r < 32767:
            pts.update((math.floor(r), math.ceil(r)))
    n = np.array(sorted(pts), dtype=np.int64)
    v = np.asarray(g(n.astype(np.float64)), dtype=np.float64)
    slopes = np.diff(v) / np.diff(n)
    ramps = []
    const = v[0] - float(np.sum(slopes * n[:-1]))
    for lo, hi, s in zip(n[:-1].tolist(), n[1:].tolist(), slopes.tolist()):
        if s != 0.0:
            ramps.append(_ramp(lo, hi, s * 2.0**bits))
    c = const * 2.0**bits
    if abs(c) >= 0.5:
        k = 16384 if c > 0 else -16384
        ramps.append(_ramp(k, k, c / k, exact=True))
    return tuple(ramps)


def _ramp(lo: int, hi: int, scale: float, exact: bool = False) -> Ramp16:
    """RESCALE(CLAMP(x, lo, hi)) by ``scale`` (sign from scale's).  ``exact``: a constant ramp whose
    value ``round(lo * scale)`` is an integer TOSA reproduces exactly."""
    if exact:
        value = int(round(lo * scale))
        m, s = quantize_multiplier(abs(value) / abs(lo))
    else:
        m, s = quantize_multiplier(abs(scale))
    sign = 1 if (scale > 0) else -1
    vmax = max(abs(lo), abs(hi))
    if vmax * abs(scale) >= 2.0**30 or not (-(1 << (s - 1)) <= lo and hi < (1 << (s - 1))):
        raise QuantizationError(f"piecewise-linear ramp over codes [{lo}, {hi}] x {scale:.6g} does not fit a "
                                "TOSA RESCALE int16 -> int32")
    r = Ramp16(int(lo), int(hi), int(m), int(s), sign)
    if exact:
        assert int(r.value(np.array([lo]))[0]) == value, "constant ramp not exact"
    return r


def build_piecewise_int16(name: str, args, kwargs, f: Callable[[np.ndarray], np.ndarray], in_scale: float,
                          out_scale: float) -> Table16Plan:
    """The exact int16 plan of ``name`` (one of :data:`EXACT_INT16`, with its node's extra ``args`` /
    ``kwargs``) from int16 codes at ``in_scale`` to int16 codes at ``out_scale`` (zero points 0);
    ``f`` is the op's float function, used for elu's exponential part and the final check.

    * leaky_relu(s):   ``x * in/out`` for x >= 0 and ``s * x * in/out`` below: two ramps, no constant;
    * hardsigmoid:     ``clamp(x / 6 + 1/2, 0, 1)``: ramps with breakpoints around x = +-3;
    * hardswish:       ``x * hardsigmoid(x)``: hardsigmoid's ramps in 2^-29, then MUL by x and RESCALE;
    * elu(a, s, i):    ``s * x`` above 0 is one ramp; below, a tiled split table of the exponential part
                       (:func:`~tabula.qmath.table16_tiled.build_table_int16_tiled`, exactly 0 above 0).

    Checked on every code (int32 sums, TOSA's REQUIREs, error vs f within half an LSB plus 2^-10 for
    the exact parts).

    Raises:
        QuantizationError: a ramp does not fit int32 at any precision, or (elu) the exponential part
            cannot be tabled within int16.
        ValueError: ``name`` has no exact form here.
    """
    s_in, s_out = float(in_scale), float(out_scale)
    k = s_in / s_out  # output LSB per input code of the identity
    if name == "aten.leaky_relu":
        a = _arg(args, kwargs, 0, "negative_slope", 0.01)
        plan = _ramp_plan(lambda c: np.where(c >= 0, c * k, a * c * k), [0.0])
    elif name == "aten.hardsigmoid":
        r = 3.0 / s_in
        plan = _ramp_plan(lambda c: np.clip(c * s_in / 6.0 + 0.5, 0.0, 1.0) / s_out, [-r, r])
    elif name == "aten.hardswish":
        r = 3.0 / s_in
        hs = ramps_for(lambda c: np.clip(c * s_in / 6.0 + 0.5, 0.0, 1.0), [-r, r], _HS_BITS)
        m, s = quantize_multiplier(s_in * 2.0 ** (_HS_MUL_SHIFT - _HS_BITS) / s_out)
        plan = Table16Plan((), hs, Table16Product(_HS_MUL_SHIFT, m, s), _HS_BITS)
    elif name == "aten.elu":
        from .table16_tiled import build_table_int16_tiled

        scale = _arg(args, kwargs, 1, "scale", 1.0)
        neg = build_table_int16_tiled(lambda x: f(np.minimum(x, 0.0)), s_in, s_out, zero_from=0)
        ramps = ramps_for(lambda c: np.maximum(c, 0.0) * scale * k, [0.0], 7 + 7)
        plan = Table16Plan(neg.terms, ramps)
    elif name in STEPS_INT16:
        return build_steps_int16(name, f, s_in, s_out)
    else:
        raise ValueError(f"{name} has no exact int16 piecewise-linear form (those are {sorted(EXACT_INT16)})")
    _check(plan, f, s_in, s_out)
    return plan


def build_steps_int16(name: str, f: Callable[[np.ndarray], np.ndarray], in_scale: float,
                      out_scale: float) -> Table16Plan:
    """The exact int16 plan of a piecewise-constant op (:data:`STEPS_INT16`: sign, round, ceil, floor) from
    int16 codes at ``in_scale`` to int16 codes at ``out_scale`` (zero points 0).

    f's values on the codes are whole numbers, so the ramps sum f itself, exactly, in units of 1: one ramp
    ``clamp(c, t-1, t)`` of slope J (the step, RESCALE by J: exact for J = 1) per code t where f steps, and
    one constant ramp; then ``final`` = the RESCALE by ``1 / out_scale``, the only rounding (half up).  So
    the output is ``q(f(dq(c)))`` on every code, ties aside (PyTorch rounds them to even), within
    ``0.5 + 2^-20`` LSB of ``f(dq(c)) / out_scale``; ``dq(c) = c * in_scale`` in float32, as PT2E's.
    The C kernel is ``tabula_table16_ramps_s16`` (its ``final_step``).

    Raises:
        QuantizationError: f takes a value that is not a whole number (round with decimals), steps more than
            :data:`MAX_STEPS` times over the input range, or the sum leaves int32.
    """
    s_in, s_out = float(in_scale), float(out_scale)
    codes = np.arange(-32768, 32768, dtype=np.int64)
    y = np.asarray(f((codes.astype(np.float32) * np.float32(s_in)).astype(np.float32)), dtype=np.float64)
    if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)) or np.abs(y).max() >= 2.0**20:
        raise QuantizationError(f"{name}: its values on the int16 input codes are not all whole numbers below 2^20 "
                                "(an int16 step plan sums them exactly); use int8 (a TABLE, exact)")
    steps = step_codes(f, s_in)
    if len(steps) > MAX_STEPS:
        raise QuantizationError(f"{name} steps {len(steps)} times over its int16 input range (+-{32767 * s_in:.4g}); "
                                f"the exact int16 form takes at most {MAX_STEPS} (one ramp each): narrow the "
                                "input range or use int8 (a TABLE, exact)")
    ramps = ramps_for(lambda c: y[np.asarray(c, dtype=np.int64) + 32768], [t - 0.5 for t in steps], 0)
    plan = Table16Plan((), ramps, None, 0, quantize_multiplier(1.0 / s_out))
    dev = table16_apply(plan, codes).astype(np.float64)
    err = np.abs(dev - np.clip(y / s_out, -32768, 32767))
    if not np.all(err <= 0.5 + 2.0**-20):
        i = int(np.argmax(err))
        raise QuantizationError(f"{name}: int16 step plan errs by {err[i]:.4f} LSB at code {int(codes[i])}")
    return plan


def step_codes(f: Callable[[np.ndarray], np.ndarray], s_in: float) -> list[int]:
    """The int16 codes ``t`` where the piecewise-constant ``f`` (float32 -> float32, PyTorch's op) steps:
    ``f(dq(t)) != f(dq(t - 1))``, with ``dq(c) = c * s_in`` in float32 as PT2E dequantizes."""
    codes = np.arange(-32768, 32768, dtype=np.int64)
    y = np.asarray(f((codes.astype(np.float32) * np.float32(s_in)).astype(np.float32)), dtype=np.float64)
    return (codes[1:][y[1:] != y[:-1]]).tolist()


def _on_codes(f, s_in: float, s_out: float):
    """``g(c) = f(dq(c)) / s_out`` on (float64) integer codes, ``dq`` in float32 as PT2E's."""
    def g(c):
        v = np.asarray(c, dtype=np.float64).astype(np.float32) * np.float32(s_in)
        return np.asarray(f(v.astype(np.float32)), dtype=np.float64) / float(s_out)
    return g


def _ramp_plan(g, kinks) -> Table16Plan:
    """Ramps of ``g`` (output LSB) at the most fraction bits (<= 14) whose sum fits int32."""
    for bits in range(_FRAC_BITS, -1, -1):
        try:
            ramps = ramps_for(g, kinks, bits)
        except QuantizationError:
            continue
        worst = sum(max(abs(r.lo), abs(r.hi)) * r.multiplier / 2.0**r.shift for r in ramps)
        if worst < 2.0**30:
            return Table16Plan((), ramps, None, bits)
    raise QuantizationError("piecewise-linear op: no fixed-point precision keeps its ramps inside int32")


def _check(plan: Table16Plan, f, s_in: float, s_out: float) -> None:
    """Every code through the device arithmetic (raises on int32 / REQUIRE trouble); the exact ops
    within half an LSB plus 2^-10 of f (elu: its table part within 1 LSB)."""
    codes = np.arange(-32768, 32768, dtype=np.int64)
    dev = table16_apply(plan, codes).astype(np.float64)
    with np.errstate(all="ignore"):
        y = np.clip(np.asarray(f(codes * np.float64(s_in)), dtype=np.float64) / np.float64(s_out), -32768, 32767)
    err = np.abs(dev - y)
    bound = 1.0 if plan.terms else 0.5 + 2.0**-10
    if not np.all(err <= bound):
        i = int(np.argmax(err))
        raise QuantizationError(f"piecewise-linear plan errs by {err[i]:.4f} LSB at code {int(codes[i])} (bound {bound})")
