"""int16 table ops: TOSA 1.0's interpolating int16 TABLE (513 entries, 16.7 output), how tabula fits
its entries, and the multi-table plans (split, zoomed) that keep an int16 table op within 1 LSB.

All arithmetic here is exact integer numpy; :func:`table16_apply` is what the device computes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import dtypes
from ..errors import QuantizationError
from ._common import _check_nan, _check_out_scale, _clip_to_domain, _end_knot_inside, _eval_f64
from .scaling import apply_scale_32_round_half_up

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
#: split, zoomed or tiled plan when that is more accurate
#: (:func:`tabula.qmath.table16_plan.build_table_int16_plan`).
TABLE16_SPLIT_ABOVE_LSB = 1.0


def table_interpolate_int16(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """TOSA 1.0 int16 TABLE (``apply_lookup_s``) on int16 ``codes``: ``i = (c + 32768) >> 7``,
    ``frac = c & 127``, ``(table[i] << 7) + (table[i+1] - table[i]) * frac`` as int32 (16.7).
    Exact integer arithmetic, no rounding (:func:`_interp64` on the 513 int16 entries)."""
    return _interp64(table, codes).astype(np.int32)


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
    ``index = x`` (``zoom == 0``) or ``saturate16((x - centre) * 2^zoom)``: a 2^zoom finer view of the
    input codes around ``centre`` (0: the middle of the range, RESCALE x * 2^zoom; a multiple of 128
    otherwise, e.g. +-32768 for the range ends, through a shift table, :func:`centre_table`).
    ``hi``/``lo``: int16 [513]; knots are ``hi`` (LSB) or ``hi * 2^7 + lo`` (1/128 LSB).  A centred
    term has ``zoom >= 1``."""

    zoom: int
    hi: np.ndarray
    lo: np.ndarray | None = None
    centre: int = 0

    def knots(self) -> np.ndarray:
        """int64 [513] in 2^-7 LSB when split, else in LSB."""
        h = np.asarray(self.hi, dtype=np.int64)
        return h if self.lo is None else h * (1 << TABLE16_FRAC_BITS) + np.asarray(self.lo, dtype=np.int64)


@dataclass(frozen=True)
class Ramp16:
    """A clamped linear term of an int16 plan, exact integer arithmetic (TOSA CLAMP then RESCALE)::

        sign * apply_scale_32(clamp(x, lo, hi), multiplier, shift)        int16 -> int32

    added to the plan's accumulator (``sign`` +1: ADD, -1: SUB).  ``lo == hi`` makes a constant.
    Sums of ramps are the continuous piecewise-linear functions of the integer input codes (leaky_relu,
    hardsigmoid, elu's linear part, :mod:`tabula.qmath.piecewise`)."""

    lo: int
    hi: int
    multiplier: int
    shift: int
    sign: int = 1

    def value(self, codes: np.ndarray) -> np.ndarray:
        """int64: the ramp's signed contribution at int16 ``codes``."""
        v = np.clip(np.asarray(codes, dtype=np.int64), self.lo, self.hi)
        return self.sign * apply_scale_32_round_half_up(v, self.multiplier, self.shift)


@dataclass(frozen=True)
class Table16Product:
    """The last step of a plan that multiplies by its own input (hardswish: ``x * hardsigmoid(x)``)::

        y = saturate16(apply_scale_32(MUL(acc, x, mul_shift), multiplier, shift))

    with TOSA MUL int32 (``(a * b + 2^(s-1)) >> s``, the product must fit int32) and x as int32."""

    mul_shift: int
    multiplier: int
    shift: int


@dataclass(frozen=True)
class Table16Plan:
    """How an int16 table op is computed: the sum of its terms' interpolations and ramps, then one
    RESCALE to the int16 output (all TOSA 1.0 ops; :func:`table16_apply` is the exact device
    arithmetic)::

        idx_t = x, RESCALE(x, x 2^k) or RESCALE(TABLE(x, shift by centre), x 2^(k-7))   per term t
        no lo, no ramps:  y = RESCALE(ADD over terms of TABLE(idx_t, hi_t), x 2^-7)    (16.7 sum)
        else:  part_t = RESCALE(TABLE(idx_t, hi_t), x 2^7) [+ TABLE(idx_t, lo_t)]     per term t
               acc = ADD over terms of part_t, ADD/SUB of the ramps                (2^-frac_bits LSB)
               y = RESCALE(acc, x 2^-frac_bits)      (or the product step, :class:`Table16Product`;
                                                       or RESCALE(acc, final) for a step plan)

    ``frac_bits``: the accumulator's unit is 2^-frac_bits output LSB -- 7 + :data:`TABLE16_FRAC_BITS`
    whenever there are terms; a ramps-only plan may use fewer bits so its ramps fit int32.

    Forms built by :func:`tabula.qmath.build_table_int16_plan`: one table (2 ops); one split table (5 ops); a
    zoomed pair, ``[zoom k: f on the middle 1/2^k of the range, clamped beyond; zoom 0: the rest]``
    (5 ops); the zoomed pair split (10 ops); a split backbone plus local zoomed corrections around
    poles, singular ends and kinks (:func:`tabula.qmath.table16_tiled.build_table_int16_tiled`).
    :mod:`tabula.qmath.piecewise` builds ramp plans for the piecewise-linear activations."""

    terms: tuple[Table16Term, ...]
    ramps: tuple[Ramp16, ...] = ()
    product: Table16Product | None = None
    frac_bits: int = 7 + TABLE16_FRAC_BITS
    #: The final RESCALE's ``(multiplier, shift)`` where it is not ``x 2^-frac_bits`` (no product): a step
    #: plan (:mod:`tabula.qmath.piecewise`) sums f itself in whole units and rescales by ``1 / s_out``.
    final: tuple[int, int] | None = None

    @property
    def split(self) -> bool:
        return any(t.lo is not None for t in self.terms)

    @property
    def wide(self) -> bool:
        """True when the accumulator is the 2^-frac_bits sum (split tables, ramps or a product) rather
        than the hi tables' 16.7 sum alone."""
        return self.split or bool(self.ramps) or self.product is not None

    @property
    def n_tables(self) -> int:
        return sum(1 + (t.lo is not None) for t in self.terms)

    @property
    def centres(self) -> list[int]:
        """The distinct non-zero centres, each one shift TABLE in the IR, in order of first use."""
        out: list[int] = []
        for t in self.terms:
            if t.centre and t.centre not in out:
                out.append(t.centre)
        return out

    @property
    def indexes(self) -> list[tuple[int, int]]:
        """The distinct ``(centre, zoom)`` with zoom > 0, each one RESCALE in the IR, in order of first use."""
        out: list[tuple[int, int]] = []
        for t in self.terms:
            if t.zoom and (t.centre, t.zoom) not in out:
                out.append((t.centre, t.zoom))
        return out

    @property
    def n_ops(self) -> int:
        """IR ops (:func:`tabula.lowering.ops.table.emit_int16`): shift TABLEs and zoom RESCALEs, TABLEs,
        RESCALEs x 2^7, per ramp a CLAMP and a RESCALE, the ADD/SUBs, the final RESCALE (or RESCALE, MUL,
        RESCALE): 2 for one table, 5 split, 5 for a zoomed pair, 11 for a split zoomed pair."""
        n_hi = len(self.terms)
        n = len(self.centres) + len(self.indexes) + n_hi  # index ops, hi TABLEs
        if not self.wide:
            return n + max(n_hi - 1, 0) + 1  # ADDs, RESCALE x 2^-7
        n_lo = sum(t.lo is not None for t in self.terms)
        n += n_hi + 2 * n_lo + 2 * len(self.ramps)  # RESCALE x 2^7 per term, lo TABLEs + ADDs, ramps
        n += n_hi + len(self.ramps) - 1  # ADD/SUBs joining the parts
        return n + (3 if self.product is not None else 1)

    @property
    def form(self) -> str:
        """``single``, ``split``, ``zoom<k>``, ``zoom<k>+split``; with centred terms ``zoom<k>@<centre>``
        per term (a tiled plan); ramp plans ``ramps<n>`` (and ``+mul`` for a product)."""
        zooms = sorted({(t.centre, t.zoom) for t in self.terms if t.zoom})
        parts = [f"zoom{k}" + (f"@{c}" if c else "") for c, k in zooms]
        if any(t.zoom == 0 and t.centre for t in self.terms):
            parts.append("shift")
        if self.ramps:
            parts.insert(0, f"ramps{len(self.ramps)}")
        if self.split:
            parts.append("split")
        if self.product is not None:
            parts.append("mul")
        return "+".join(parts) or "single"


def zoom_rescale(k: int) -> tuple[int, int]:
    """(multiplier, shift) of the RESCALE int16 -> int16 x 2^k of a zoomed term: ``(x * 2^30 + 2^(29-k))
    >> (30-k) == x * 2^k`` exactly, then saturated to int16 (TOSA's REQUIRE |x| < 2^(29-k) holds)."""
    return 1 << 30, 30 - k


def centre_table(centre: int) -> np.ndarray:
    """The int16 [513] shift TABLE of a centred term: knots ``clip(code - centre)``, so its output is
    ``128 * (x - centre)`` exactly wherever ``-32768 <= x - centre < 32640`` (``centre`` a multiple of 128
    puts the lower clip on a knot), and at least ``128 * 32640`` above.  RESCALEd by 2^(k-7) (k >= 1,
    :func:`centre_rescale`) it gives the term's index ``saturate16((x - centre) * 2^k)`` on every int16 x:
    where the shift is inexact the index saturates either way.

    Raises:
        ValueError: ``centre`` is not a multiple of 128 or outside [-65536, 65536].
    """
    if centre % 128 or not -65536 <= centre <= 65536:
        raise ValueError(f"a table centre is a multiple of 128 in [-65536, 65536], not {centre}")
    return np.clip(INT16_TABLE_CODES - centre, -32768, 32767).astype(np.int16)


def centre_rescale(k: int) -> tuple[int, int]:
    """(multiplier, shift) of the RESCALE int32 -> int16 x 2^(k-7) that turns the shift TABLE's output
    ``128 * w`` into the index ``saturate16(w * 2^k)``: ``(128 w * 2^30 + 2^(36-k)) >> (37-k) == w * 2^k``
    exactly (``|128 w| <= 2^22 < 2^(36-k)``: TOSA's REQUIRE holds for k <= 13)."""
    return 1 << 30, 37 - k


def _zoom_index(codes: np.ndarray, k: int, centre: int = 0) -> np.ndarray:
    if k == 0 and centre == 0:
        return np.asarray(codes, dtype=np.int64)
    return np.clip((np.asarray(codes, dtype=np.int64) - centre) << k, -32768, 32767)


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
        QuantizationError: an int32 intermediate would overflow, or a RESCALE would break TOSA's REQUIRE
            on its input (never for plans the builders return: they check them on every code).
    """
    if not isinstance(plan, Table16Plan):
        plan = Table16Plan((Table16Term(0, np.asarray(plan)),))
    lo32, hi32 = dtypes.range_of("int32")
    codes = np.asarray(codes, dtype=np.int64)
    idx = {(t.centre, t.zoom): _zoom_index(codes, t.zoom, t.centre) for t in plan.terms}

    def total(parts):
        acc = np.zeros(np.shape(codes), dtype=np.int64)
        for part in parts:
            acc = acc + part
            if acc.size and (acc.min() < lo32 or acc.max() > hi32):
                raise QuantizationError("int16 table: a sum of table terms leaves int32")
        return acc

    def rescale(v, m, s):
        lim = np.int64(1) << (s - 1)
        if v.size and (v.min() < -lim or v.max() >= lim):
            raise QuantizationError(f"int16 table: a RESCALE input leaves [-2^{s - 1}, 2^{s - 1}), TOSA's REQUIRE")
        return apply_scale_32_round_half_up(v, m, s)

    his = [table_interpolate_int16(t.hi, idx[(t.centre, t.zoom)]).astype(np.int64) for t in plan.terms]
    if not plan.wide:
        out = apply_scale_32_round_half_up(total(his), *TABLE16_RESCALE)
        return np.clip(out, -32768, 32767).astype(np.int16)
    parts = []
    for t, h in zip(plan.terms, his):
        part = rescale(h, *TABLE16_SPLIT_SHIFT_UP)
        if t.lo is not None:
            part = total([part, table_interpolate_int16(t.lo, idx[(t.centre, t.zoom)]).astype(np.int64)])
        parts.append(part)
    parts += [r.value(codes) for r in plan.ramps]
    acc = total(parts)
    if plan.product is None:
        out = rescale(acc, *(plan.final or (1 << 30, 30 + plan.frac_bits)))
    else:
        p = plan.product
        prod = acc * codes
        if p.mul_shift:
            prod = (prod + (np.int64(1) << (p.mul_shift - 1))) >> p.mul_shift
        prod = total([prod])
        out = rescale(prod, p.multiplier, p.shift)
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
                     base: np.ndarray | None = None, mask: np.ndarray | None = None,
                     base_knots: np.ndarray | None = None) -> np.ndarray:
    """Globally best integer table among ``states`` (candidate values per entry, int64 [513, S], in
    2^-frac_bits output LSB: 0 for a single table, :data:`TABLE16_FRAC_BITS` for a split one) by
    dynamic programming over the chain of entries: first the smallest achievable max error of the
    device output over every code (a bottleneck path: a segment's error depends only on its two
    entries), then, among tables reaching it, the smallest sum of squared errors.  Transitions that
    leave int16, break the slope limit or reverse a monotone segment (:func:`_table16_segment_directions`)
    are forbidden, so the result keeps f's monotonicity.
    ``base`` (int64 [512, 128], in 2^-(7+frac_bits) LSB): what the other terms of a composite table add
    at each code before the final rounding; ``mask`` (bool [512, 128]): the index codes that occur
    (a zoomed term only sees multiples of 2^zoom); errors elsewhere are ignored.  ``base_knots`` (float
    [513], in 2^-frac_bits LSB): the other terms' sum at each knot's input position, linear between
    knots; the direction rules then apply to the total (knot + base) instead of the knot alone (a
    correction term whose total must follow f, :mod:`tabula.qmath.table16_tiled`)."""
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
    dt = d if base_knots is None else d + np.diff(base_knots)[:, None, None]  # the total's step
    eps = 0 if base_knots is None else 1e-9
    ok = (d >= smin) & (d <= smax) & ~((dk == 1) & (dt < -eps)) & ~((dk == -1) & (dt > eps)) & ~((dk == 2) & (d != 0))
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
                     split above and below f), rounded; then, among integer tables near it, the one with the
                     smallest max error of what the device outputs (interpolation *and* the final
                     rounding) over every code, by dynamic programming over the entries
                     (:func:`_table16_minimax`).  Kept only where it beats plain sampling (it always has so far).
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
