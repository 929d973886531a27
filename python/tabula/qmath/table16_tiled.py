"""Tiled int16 tables: a split backbone table plus local zoomed corrections, for functions that one
table (or a zoomed pair) cannot follow within 1 output LSB -- a pole or an infinite slope inside the
range (log, sqrt, rsqrt, reciprocal at 0; acosh at 1, log1p at -1), a singular end of the domain
(asin, acos, atanh at +-1), a kink (hardswish at +-3) or curvature everywhere (exp, cos over wide
ranges).

The input range is cut at multiples of 128 codes into intervals; each interval gets the coarsest zoom
k whose segments (128 / 2^k codes) follow f there (chord error under :data:`TILE_CHORD_LSB`).  The
plan is then, all TOSA ops (:class:`~tabula.qmath.table16.Table16Plan`):

* the **backbone**: one split table indexed by x (zoom 0), fitted to f outside the zoomed intervals
  and at their end codes;
* per zoomed interval a **correction** ``f - backbone``: a split table indexed by
  ``saturate16((x - centre) * 2^k)``, exactly 0 outside its interval (its knots there are fixed at
  0), so the terms never disturb one another.  Corrections with the same ``(centre, k)`` share one
  table.  ``centre`` is a multiple of 128 whose window ``centre +- 2^(15-k)`` holds the interval
  (0 and the range ends +-32768 first, so most corrections need no shift table).

With every code of a zoom-7 window a knot, f's values there are reproduced to 1/256 LSB whatever f
does between codes, so a singular point costs a few hundred codes of zoom 7 and the chord error
falls off with zoom as f straightens.  Each knot is chosen by the exact integer bottleneck search of
:func:`~tabula.qmath.table16._table16_minimax` over what the device computes, the directions of the
*total* following f's, so the output is monotone wherever f is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import QuantizationError
from ._common import _check_nan, _check_out_scale, _clip_to_domain, _end_knot_inside, _eval_f64
from .table16 import (
    INT16_TABLE_CODES,
    TABLE16_FRAC_BITS,
    Table16Plan,
    Table16Term,
    _check_slopes,
    _interp64,
    _knot_states,
    _table16_minimax,
    _table16_segment_directions,
    _zoom_index,
    split_table_int16,
    table16_apply,
)

__all__ = ["TILE_CHORD_LSB", "Tile", "required_zooms", "plan_tiles", "build_table_int16_tiled"]

#: A block of 128 codes is zoomed until the chord error of its segments (the largest distance of f
#: from the straight line between two adjacent knots, in output LSB) is at most this.  With knots in
#: 1/128 LSB the fit halves it and the final rounding adds 1/2: about 0.65 LSB, within 1.
TILE_CHORD_LSB = 0.3

#: A correction segment over which f moves less than this (output LSB) has no direction rule: the
#: candidate knots (1/16 LSB apart) could not follow it; the plan's output is still checked monotone.
_FLAT_LSB = 2.0**-6

#: Knot steps of f (output LSB) above which the backbone bridges an interval with a straight line
#: (a table's knots may differ by at most 32767).
_BRIDGE_ABOVE = 24576.0

_REAL = np.arange(-32768, 32768, dtype=np.int64)
_PREFERRED_CENTRES = (0, -32768, 32768)


@dataclass(frozen=True)
class Tile:
    """Codes ``[start, end]`` (multiples of 128; ``end`` 32768 is the virtual end code) get a correction
    at zoom ``zoom`` indexed around ``centre``."""

    start: int
    end: int
    zoom: int
    centre: int


def required_zooms(y: np.ndarray, chord_lsb: float = TILE_CHORD_LSB) -> np.ndarray:
    """int64 [512]: per block of 128 codes the smallest zoom k in 0..7 whose segments of 128 / 2^k
    codes have a chord error of at most ``chord_lsb`` output LSB against ``y`` (f / out_scale at the
    codes -32768..+32768, 65,537 values).  Zoom 7 (every code a knot) has none."""
    req = np.full(512, 7, dtype=np.int64)
    for k in range(6, -1, -1):
        h = 128 >> k
        Y = y[:-1].reshape(-1, h)
        ends = y[h::h]
        chord = Y[:, :1] + (ends[:, None] - Y[:, :1]) * (np.arange(h) / h)
        err = np.abs(Y - chord).max(axis=1).reshape(512, -1).max(axis=1)
        req = np.where(err <= chord_lsb, k, req)
    return req


def _centre_for(start: int, end: int, k: int, used=()) -> int | None:
    """A centre (multiple of 128) whose zoom-k window ``[c - 2^(15-k), c + 2^(15-k)]`` holds the codes
    ``[start, end]`` without saturating the index at ``end`` (allowed only at the virtual end 32768):
    the preferred ones first, then one already used, else the window starting at ``start``."""
    w = 1 << (15 - k)

    def fits(c: int) -> bool:
        return c - w <= start and (end < c + w or end == c + w == 32768) and -65536 <= c <= 65536

    for c in (*_PREFERRED_CENTRES, *used, start + w):
        if fits(c):
            return c
    return None


def plan_tiles(req: np.ndarray) -> list[Tile]:
    """The zoomed intervals for per-block zooms ``req`` ([512]): a dynamic programme over the block
    boundaries that covers every block with an interval of zoom >= its requirement, at most a window
    long, minimising the number of corrections (then non-preferred centres, then zoom).  Blocks that
    need no zoom are the backbone's alone."""
    n = 512
    best = [0.0] + [float("inf")] * n
    back: list[tuple[int, int] | None] = [None] * (n + 1)
    for q in range(1, n + 1):
        k = 0
        for p in range(q - 1, -1, -1):
            k = max(k, int(req[p]))
            if k == 0:
                cost = best[p]
            else:
                if q - p > (1 << (9 - k)):
                    break
                c = _centre_for(-32768 + 128 * p, -32768 + 128 * q, k)
                if c is None:
                    continue
                cost = best[p] + 1.0 + (0.0 if c in _PREFERRED_CENTRES else 0.3) + 0.01 * k
            if cost < best[q] - 1e-12:
                best[q], back[q] = cost, (p, k)
    tiles: list[Tile] = []
    used: list[int] = []
    q = n
    spans = []
    while q > 0:
        p, k = back[q]
        spans.append((p, q, k))
        q = p
    for p, q, k in reversed(spans):
        if k == 0:
            continue
        start, end = -32768 + 128 * p, -32768 + 128 * q
        c = _centre_for(start, end, k, used)
        if c not in _PREFERRED_CENTRES and c not in used:
            used.append(c)
        tiles.append(Tile(start, end, k, c))
    return tiles


def _weighted_least_squares(Y: np.ndarray, y_end: float, w: np.ndarray, ridge: float = 1e-6) -> np.ndarray:
    """Real 513 knots minimising the ``w``-weighted squared distance of the piecewise-linear table to
    ``Y`` ([512, 128]), plus ``ridge`` times the distance of each knot to ``Y`` at its own code (which
    keeps knots over unweighted segments defined)."""
    r = np.arange(128, dtype=np.float64) / 128.0
    a, b = 1.0 - r, r
    n = 513
    i = np.arange(512)
    A = np.zeros((n, n))
    A[i, i] += (w * a * a).sum(axis=1)
    A[i + 1, i + 1] += (w * b * b).sum(axis=1)
    ab = (w * a * b).sum(axis=1)
    A[i, i + 1] += ab
    A[i + 1, i] += ab
    rhs = np.zeros(n)
    rhs[:512] += (w * Y * a).sum(axis=1)
    rhs[1:] += (w * Y * b).sum(axis=1)
    A[np.arange(n), np.arange(n)] += ridge
    rhs += ridge * np.append(Y[:, 0], y_end)
    return np.linalg.solve(A, rhs)


def _share_flat_runs(states: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """Knots joined by flat segments (``dirs == 2``: they must be equal) take the candidate values of
    the run's first knot, so an equal choice exists."""
    st = states.copy()
    m = 0
    while m < 512:
        if dirs[m] != 2:
            m += 1
            continue
        a = m
        while m < 512 and dirs[m] == 2:
            m += 1
        st[a:m + 1] = st[a]
    return st


def _target_fn(f, in_scale: float, out_scale: float, domain):
    """y(u) = f(u * in_scale) / out_scale at real code positions u (clipped to the domain), saturated
    to the int16 range like :func:`~tabula.qmath.table16._table16_target`."""
    def y(u: np.ndarray) -> np.ndarray:
        x = _clip_to_domain(np.asarray(u, dtype=np.float64) * np.float64(in_scale), domain)
        return np.clip(_eval_f64(f, x) / np.float64(out_scale), -32768.0, 32767.0)
    return y


def build_table_int16_tiled(
    f: Callable[[np.ndarray], np.ndarray],
    in_scale: float,
    out_scale: float,
    *,
    domain: tuple[float, float] | None = None,
    zero_from: int | None = None,
    chord_lsb: float = TILE_CHORD_LSB,
) -> Table16Plan:
    """A split backbone table plus zoomed corrections (module docstring) for ``f``: int16 input codes
    (zero point 0, scale ``in_scale``) to int16 output codes (zero point 0, scale ``out_scale``), f
    evaluated in float64 on inputs clipped to ``domain`` (+-inf saturate).

    ``zero_from``: a multiple of 128; the plan is exactly 0 at every code >= it (its knots there are
    fixed at 0) -- for a table that another exact term completes (elu's linear part,
    :mod:`tabula.qmath.piecewise`); f must be 0 there.

    Returns:
        a :class:`Table16Plan`: the backbone (zoom 0) first, then one term per ``(centre, zoom)``, all
        split; checked on every code (int32 sums, TOSA's REQUIREs).
    Raises:
        QuantizationError: ``out_scale`` is not a positive finite number, f is NaN at some code, a knot
            difference leaves int16 (a jump of more than half the output range between two adjacent
            codes), or no candidate knots keep f's directions.
    """
    _check_out_scale(out_scale)
    j = TABLE16_FRAC_BITS
    yc = _target_fn(f, in_scale, out_scale, domain)
    y = _end_knot_inside(yc(np.arange(-32768, 32769, dtype=np.float64)))  # every code and the virtual +32768
    _check_nan(y, np.arange(-32768, 32769))
    if zero_from is not None:
        if zero_from % 128 or not -32768 <= zero_from <= 32768:
            raise ValueError(f"zero_from must be a multiple of 128 in [-32768, 32768], not {zero_from}")
        if np.abs(y[zero_from + 32768:]).max() > 1e-9:
            raise QuantizationError(f"zero_from={zero_from}: f is not 0 at every code from there")
    req = required_zooms(y, chord_lsb)
    if zero_from is not None:
        req[(zero_from + 32768) // 128:] = 0
    tiles = plan_tiles(req)
    # ---- backbone: zoom 0, fitted outside the zoomed intervals and at their end codes
    seen = np.ones(65536, dtype=bool)
    for t in tiles:
        seen[t.start + 32768:min(t.end, 32767) + 32769] = False
        seen[t.start + 32768] = True
        if t.end <= 32767:
            seen[t.end + 32768] = True
    Y = y[:-1].reshape(512, 128)
    dirs = _table16_segment_directions(y[:-1], float(y[-1]))
    # inside a zoomed interval the backbone follows f, or -- where f jumps by more than a table slope
    # allows between two knots (a pole) -- a straight line between the interval's end codes
    bridge = y.copy()
    for t in tiles:
        dirs[(t.start + 32768) // 128:(t.end + 32768) // 128] = 0  # the correction sets the direction there
        a, b = t.start + 32768, min(t.end, 32767) + 32768
        if np.abs(np.diff(y[a:b + 1:128])).max(initial=0.0) > _BRIDGE_ABOVE:
            bridge[a:b + 1] = np.linspace(y[a], y[b], b - a + 1)
            if t.end == 32768:
                bridge[-1] = bridge[-2]
    w = seen.reshape(512, 128).astype(float)
    center = np.rint(_weighted_least_squares(bridge[:-1].reshape(512, 128), float(bridge[-1]), w) * (1 << j))
    sample = np.clip(np.rint(bridge[::128]), -32768, 32767).astype(np.int64)
    states = _share_flat_runs(_knot_states(center.astype(np.int64), j, sample << j), dirs)
    if zero_from is not None:
        states[(zero_from + 32768) // 128:] = 0
    backbone = _table16_minimax(Y, states, dirs, j, mask=seen.reshape(512, 128))
    base = _interp64(backbone, _REAL)  # exact sum of the terms so far at every code, 2^-14 LSB
    # ---- corrections, left to right: each sees the exact sum of the terms before it
    groups: dict[tuple[int, int], np.ndarray] = {}
    for t in tiles:
        kn = _fit_correction(t, y, yc, base, j)
        key = (t.centre, t.zoom)
        groups[key] = groups.get(key, 0) + kn
        base = base + _interp64(kn, _zoom_index(_REAL, t.zoom, t.centre))
    terms = [_split_term(backbone, 0, 0, in_scale)]
    terms += [_split_term(kn, k, c, in_scale) for (c, k), kn in groups.items()]
    plan = Table16Plan(tuple(terms))
    table16_apply(plan, _REAL)  # raises where an intermediate breaks int32 or TOSA's REQUIRE
    return plan


def _fit_correction(t: Tile, y: np.ndarray, yc, base: np.ndarray, j: int) -> np.ndarray:
    """The knots (2^-j LSB) of the correction over tile ``t``: 0 outside it, the device output of the
    total (``base`` + this term, rounded) nearest to ``y`` on its codes."""
    sh = 7 + j
    k, c = t.zoom, t.centre
    index_codes = np.arange(-32768, 32769, dtype=np.int64)
    u = c + index_codes / float(1 << k)  # the input position of every index code
    inside = (u >= t.start) & (u <= t.end)
    bb_u = np.interp(u, _REAL.astype(np.float64), base / float(1 << sh))  # the sum so far (linear between codes)
    total = np.where(inside, yc(np.clip(u, t.start, t.end)), np.nan)  # f where the term acts
    target = np.where(inside, total - bb_u, 0.0)  # what the term adds: real, for the least squares
    codes = _REAL[(_REAL >= t.start) & (_REAL <= min(t.end, 32767))]
    idx = _zoom_index(codes, k, c) + 32768
    Y = np.zeros(65536)
    Y[idx] = y[codes + 32768]
    mask = np.zeros(65536, dtype=bool)
    mask[idx] = True
    bidx = np.zeros(65536, dtype=np.int64)
    bidx[idx] = base[codes + 32768]
    w = mask.reshape(512, 128).astype(float)
    center = np.rint(_weighted_least_squares(target[:-1].reshape(512, 128), float(target[-1]), w) * (1 << j))
    # directions of the total where the term acts (a flat stretch is free: the total cannot be exactly
    # flat over a backbone slope; the fit keeps it within the bound); outside, the knots are fixed at 0
    seg = np.concatenate([total[:-1].reshape(512, 128), total[128::128][:, None]], axis=1)
    with np.errstate(invalid="ignore"):
        d = np.diff(seg, axis=1)
        up, down = np.all(~(d < 0), axis=1), np.all(~(d > 0), axis=1)
        span = np.where(np.isnan(seg), -np.inf, seg).max(axis=1) - np.where(np.isnan(seg), np.inf, seg).min(axis=1)
    nearly_flat = ~(span >= _FLAT_LSB)  # (-inf: all outside the tile)
    dirs = np.where(up & down | nearly_flat, 0, np.where(up, 1, np.where(down, -1, 0)))
    states = _knot_states(center.astype(np.int64), j)
    m0 = (max((t.start - c) << k, -32768) + 32768) // 128
    m1 = (min((t.end - c) << k, 32768) + 32768) // 128
    states[:m0 + 1] = 0
    if t.end <= 32767:  # at the virtual end 32768 no code lies beyond: the last knot stays free
        states[m1:] = 0
    knot_u = np.clip(c + INT16_TABLE_CODES / float(1 << k), -32768, 32767)
    base_knots = np.interp(knot_u, _REAL.astype(np.float64), base.astype(np.float64)) / 128.0  # 2^-j LSB
    return _table16_minimax(Y.reshape(512, 128), states, dirs, j, base=bidx.reshape(512, 128),
                            mask=mask.reshape(512, 128), base_knots=base_knots)


def _split_term(knots: np.ndarray, zoom: int, centre: int, in_scale: float) -> Table16Term:
    hi, lo = split_table_int16(knots)
    _check_slopes(hi, in_scale / 2**zoom)
    return Table16Term(zoom, hi.astype(np.int16), lo.astype(np.int16), centre)
