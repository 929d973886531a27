"""The integer LayerNorm plan: every constant, shift and iteration count of the TOSA op sequence
:mod:`tabula.lowering.ops.layer_norm` emits, with the ranges that make each op legal proven here.

One row of ``C`` input codes ``x`` (zero point ``zp``), ``X = x - zp`` (exact in int32):

* ``S = sum X``, ``D = C*X - S`` (exact: ``C * (X - mean)``, ``|D| <= C * w`` with ``w`` the dtype's
  code span, 255 or 65535), ``W = sum round(D^2 / 2^b)`` (TOSA MUL with shift ``b``, the smallest that
  keeps every ``W`` below 2^29), ``W' = W + E`` with ``E = max(1, round(eps / s^2 * C^3 / 2^b))``:
  ``W' ~ C^3 (Var(X) + eps / s^2) / 2^b``, the variance in ``2^b / C^3`` code^2 units.
* ``r ~ sqrt(W')``: an upper-bound seed from two int16 TABLEs (the coarse one on ``W' / 2^14``, the fine
  one on ``W'`` saturated to int16) and their minimum (``W' < 2^29``: the shift ``b`` keeps it there), then :attr:`LayerNormPlan.newton` integer Newton
  steps ``r = round((r + W' // r) / 2)`` (INTDIV, ADD, RESCALE); checked here on every ``W'`` below
  2^22 and on a geometric sweep above: ``|r - sqrt(W')| <= 1``.
* ``R = (2^30 + round(r / 2)) // r`` (~ ``2^30 / sqrt(W')``), ``P = round(D * R / 2^s1)``,
  ``Y = round(P * G[c] / 2^s2) + B[c]`` on a ``2^f`` fixed-point output grid, ``y = RESCALE(Y, 2^-f) + zp_y``:
  ``G[c] = gamma[c] sqrt(C / 2^b) / s_y`` and ``B[c] = beta[c] / s_y`` (scaled).  ``|D / sqrt(W')| <=
  sqrt((C - 1) 2^b / C)`` (a normalized value is at most ``sqrt(C - 1)``) bounds ``P``; ``f`` is the
  largest with ``(Y_max + B_max) 2^f <= 2^30``.

Error (:meth:`LayerNormPlan.error_lsb`), against the exact LayerNorm of the dequantized input codes in
output LSB: ``0.5`` (the last rounding) plus ``|y| * (1.5 / r + C / (2 W') + r / 2^31 + 2^(s1 - 30) / |n|)`` and the
fixed-point terms ``2^-f``; for a row of standard deviation ``sigma`` codes ``r ~ sigma * sqrt(C^3 / 2^b)``.
Rows whose variance is far below the grid (``sigma`` of a few codes) are dominated by the input
quantization itself.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ._common import QuantizationError

__all__ = ["LayerNormPlan", "build_layer_norm_plan", "seed_tables", "seed_of", "newton_count", "NEWTON_STEPS"]

#: ``R``'s numerator: 2^30 (INTDIV's dividend stays in int32 with the rounding half of ``r`` added).
INV_ONE = 1 << 30
#: The coarse seed table's index is ``W' / 2^COARSE`` (TOSA RESCALE, rounded half up).
COARSE = 14
#: Every W' stays below 2^W_BITS: the fine seed index is RESCALE(W', x1), whose TOSA REQUIRE takes
#: |W'| < 2^29 (shift 30).
W_BITS = 29
#: Newton steps after the seed: :func:`newton_count` (tests/qmath/test_layer_norm_plan.py checks it).
NEWTON_STEPS = 3


@dataclass(frozen=True)
class LayerNormPlan:
    """What :func:`build_layer_norm_plan` decided (module doc)."""

    c: int  #: row length
    b: int  #: the square's shift
    e: int  #: eps in W' units
    newton: int  #: Newton steps after the seed
    s1: int  #: P's shift
    s2: int  #: the gamma product's shift
    f: int  #: fractional bits of Y
    g: np.ndarray  #: int32 [C] gamma multipliers
    beta: np.ndarray  #: int32 [C] beta on the 2^f grid
    w_max: int  #: the largest W' any row can give
    y_max: float  #: the largest |normalized * gamma / s_y| any row can give, in output LSB

    def error_lsb(self, sigma_codes: float) -> float:
        """The error bound (output LSB) for a row of standard deviation ``sigma_codes`` input codes."""
        w = max(float(self.e), sigma_codes**2 * self.c**3 / 2.0**self.b)
        r = math.sqrt(w)
        rel = 1.5 / r + self.c / (2.0 * w) + r / 2.0**31
        return 0.5 + self.y_max * rel + 2.0 ** (self.s1 - 30) * self.y_max + 2.0 ** (-self.f) * 2


def _seed_entries(f, lo_code: int) -> np.ndarray:
    """An int16 TABLE (513 entries, 16.7 output) whose interpolation, read as ``out / 64``, is at least
    ``f(code)`` on every code >= ``lo_code``: each knot raised by the larger gap of its two segments
    (``f`` concave), plus 1 for the rounding of ``/ 64``."""
    knots = -32768 + 128 * np.arange(513, dtype=np.int64)
    x = np.maximum(knots, lo_code).astype(np.float64)
    fk = f(x)
    gaps = np.zeros(512)
    for i in range(512):
        a, bnd = knots[i], knots[i + 1]
        if bnd <= lo_code:
            continue
        xs = np.arange(max(a, lo_code), min(bnd, 32767) + 1, dtype=np.float64)
        chord = fk[i] + (fk[i + 1] - fk[i]) * (xs - a) / 128.0
        gaps[i] = max(0.0, float((f(xs) - chord).max()))
    raise_by = np.maximum(np.concatenate([[0.0], gaps]), np.concatenate([gaps, [0.0]]))
    entries = np.ceil((fk + raise_by) / 2.0 + 1.0)  # units of 2: out / 64 = 2 * out / 128
    entries[knots < lo_code] = entries[knots >= lo_code][0]
    return np.clip(entries, -32768, 32767).astype(np.int16)


@functools.lru_cache(maxsize=None)
def seed_tables() -> tuple[np.ndarray, np.ndarray]:
    """The coarse and fine seed tables, *negated* (so one REDUCE_MAX of the pair gives minus their
    minimum): coarse ``<= -sqrt(i * 2^16 + 2^15)`` at index ``i``, fine ``<= -sqrt(i)`` for ``i < 32767`` and
    ``<= -46341`` (beyond any int32's root) at the saturated 32767, each read as ``out / 64``."""
    coarse = _seed_entries(lambda v: np.sqrt(np.maximum(v, 0) * 2.0**COARSE + 2.0**(COARSE - 1)), 0)
    fine = _seed_entries(lambda v: np.sqrt(np.maximum(v, 0)), 0)
    fine[-1] = 32767  # code 32767 (saturated): 2 * (fine[511] + 127/128 (fine[512] - fine[511])) >= 46341
    top = 2.0 * (int(fine[511]) * 128 + (int(fine[512]) - int(fine[511])) * 127) / 128.0
    if top < 46341 + 2:
        raise QuantizationError(f"layer_norm seed table's saturated entry reads {top}, under 46341")
    return (-coarse.astype(np.int32)).astype(np.int16), (-fine.astype(np.int32)).astype(np.int16)


def _interp(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    t = table.astype(np.int64)
    i = (idx.astype(np.int64) + 32768) >> 7
    frac = idx.astype(np.int64) & 0x7F
    return (t[i] << 7) + (t[np.minimum(i + 1, 512)] - t[i]) * frac


def _round_shift(v: np.ndarray, s: int) -> np.ndarray:
    return (v + (1 << (s - 1))) >> s


def seed_of(w: np.ndarray) -> np.ndarray:
    """The seed the TABLE pair and their minimum give for int64 ``w`` (what the op sequence computes)."""
    coarse, fine = seed_tables()
    i1 = np.clip(_round_shift(w, COARSE), -32768, 32767)
    i2 = np.clip(w, -32768, 32767)
    n1 = _round_shift(_interp(coarse, i1), 6)
    n2 = _round_shift(_interp(fine, i2), 6)
    return -np.maximum(n1, n2)


def newton_steps(w: np.ndarray, r: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        r = _round_shift(r + w // r, 1)
    return r


@functools.lru_cache(maxsize=None)
def newton_count() -> int:
    """The fewest Newton steps after which ``|r - sqrt(W')| <= 1`` on every ``W'`` in ``[1, 2^20]`` and on a
    geometric sweep (with the knots of both seed tables and their neighbours) up to ``2^29 - 1``."""
    knots = np.arange(0, 32768, 128, dtype=np.int64)
    edges = np.concatenate([knots * 2**COARSE + d for d in (-2**15 - 1, -2**15, 2**15 - 1, 2**15)])
    top = 2**W_BITS - 1
    sweep = np.geomspace(1, top, 100000).astype(np.int64)
    w = np.unique(np.concatenate([np.arange(1, (1 << 20) + 1, dtype=np.int64), sweep, edges, [top]]))
    w = w[(w >= 1) & (w <= top)]
    r = seed_of(w)
    if (r < np.sqrt(w) - 1e-9).any():
        raise QuantizationError("layer_norm seed under the root")
    for steps in range(0, 12):
        got = newton_steps(w, r, steps)
        if np.abs(got - np.sqrt(w.astype(np.float64))).max() <= 1.0:
            return steps
    raise QuantizationError("layer_norm's integer square root did not settle in 12 Newton steps")


def build_layer_norm_plan(c: int, in_scale: float, in_dtype: str, eps: float, gamma: np.ndarray | None,
                          beta: np.ndarray | None, out_scale: float) -> LayerNormPlan:
    """The plan for rows of ``c`` codes of ``in_dtype`` at ``in_scale``, PyTorch's ``eps``, the float
    ``gamma`` / ``beta`` [C] (None: 1 / 0) and the output grid's scale.  QuantizationError when a range
    cannot be made to fit (a row longer than int32 allows)."""
    lo, hi = dtypes.range_of(in_dtype)
    span = hi - lo
    d_max = c * span
    if d_max >= 2**31:
        raise QuantizationError(f"layer_norm over rows of {c}: C * (x - mean) leaves int32")
    sum_sq = c**3 * (span / 2.0) ** 2  # sum D^2 <= C^2 * C * (span/2)^2
    b = 0
    while sum_sq / 2.0**b + c / 2.0 + 1 > 2**W_BITS - 1 - 2**20:
        b += 1
    e = max(1, int(round(eps / in_scale**2 * c**3 / 2.0**b)))
    w_max = int(math.floor(sum_sq / 2.0**b + c / 2.0)) + e
    if w_max > 2**W_BITS - 1:
        raise QuantizationError(f"layer_norm eps {eps} is {e} variance units: W' leaves int32")
    newton = NEWTON_STEPS
    g = np.ones(c) if gamma is None else np.asarray(gamma, np.float64)
    bt = np.zeros(c) if beta is None else np.asarray(beta, np.float64)
    if not (np.isfinite(g).all() and np.isfinite(bt).all()):
        raise QuantizationError("layer_norm weight or bias holds NaN or Inf")
    # |D * R| <= sqrt((C-1) 2^b / C) * 2^30 (R ~ 2^30 / sqrt(W'), + rounding): P fits 2^30 after s1
    # |D| <= sqrt(sum D^2) <= sqrt(2^b (W + C/2)) <= sqrt(2^b (1 + C/2)) sqrt(W') and R <= 2^30 / (sqrt(W') - 1) + 1
    pr_max = math.sqrt(2.0**b * (1 + c / 2.0)) * INV_ONE * 1.02 + d_max
    s1 = max(0, math.ceil(math.log2(pr_max)) - 30)
    gain = np.abs(g) * math.sqrt(c / 2.0**b) / out_scale  # y = P * 2^(s1 - 30) * gain
    y_max = float(math.sqrt(max(c - 1, 1)) * np.max(np.abs(g)) / out_scale)  # a normalized value <= sqrt(C - 1)
    y_bound = float(pr_max / INV_ONE * gain.max()) + 1  # what the integers can reach (the roundings included)
    b_max = float(np.max(np.abs(bt))) / out_scale
    f = math.floor(math.log2(2**30 / (y_bound + b_max + 1)))
    if f < 2:
        raise QuantizationError(f"layer_norm output grid {out_scale:g} is too fine for its weight (|y| up to {y_max:.3g} LSB)")
    # G = gain * 2^(s1 - 30 + f + s2) with |G| < 2^30: the product P * G (<= 2^60) stays in TOSA MUL's 64 bits
    top = float(gain.max()) * 2.0 ** (s1 - 30 + f)
    s2 = max(0, min(62, math.floor(math.log2(2**30 / top)) if top > 0 else 30))
    gq = np.rint(g * math.sqrt(c / 2.0**b) / out_scale * 2.0 ** (s1 - 30 + f + s2)).astype(np.int64)
    bq = np.rint(bt / out_scale * 2.0**f).astype(np.int64)
    if np.abs(gq).max() >= 2**31 or np.abs(bq).max() >= 2**31:
        raise QuantizationError("layer_norm constants leave int32")
    return LayerNormPlan(c, b, e, newton, s1, s2, f, gq.astype(np.int32), bq.astype(np.int32), w_max, y_max)
