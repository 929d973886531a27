"""Which int16 table form an op gets: the cheapest :class:`~tabula.qmath.table16.Table16Plan` within 1
output LSB (:func:`build_table_int16_plan`), trying one table, split and zoomed pairs
(:mod:`tabula.qmath.table16`) and tiled plans (:mod:`tabula.qmath.table16_tiled`) in order of cost."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import QuantizationError
from ._common import _check_out_scale, _clip_to_domain, _eval_f64
from .table16 import (
    TABLE16_SPLIT_ABOVE_LSB,
    Table16Plan,
    Table16Term,
    _monotone_where_f_is,
    _table16_target,
    build_table_int16,
    build_table_int16_split,
    build_table_int16_zoom,
    table16_apply,
)
from .table16_tiled import build_table_int16_tiled

__all__ = ["build_table_int16_plan", "most_accurate"]

#: One table erring by more than this (output LSB) has a singularity the split and zoomed pairs cannot
#: follow: :func:`build_table_int16_plan` goes straight to a tiled plan.
_CLASSIC_FORMS_BELOW_LSB = 64.0

#: Chord targets (output LSB) a tiled plan is tried with, cheapest first
#: (:data:`tabula.qmath.table16_tiled.TILE_CHORD_LSB`).
_TILED_CHORDS_LSB = (0.45, 0.3, 0.2)


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
    3. a split zoomed pair (zoom 1, 2 or 3; 11 IR ops), the most accurate;
    4. a tiled plan (:func:`tabula.qmath.table16_tiled.build_table_int16_tiled`): a split backbone plus
       zoomed corrections where f bends, jumps or has a singular point (asin/acos/atanh at +-1, log,
       sqrt, rsqrt, reciprocal at 0, acosh at 1, log1p at -1, exp's top, cos over a wide range),
       coarser zooms first;

    and, when none reaches the bound, the most accurate -- where a costlier form must cut the max
    error by 10 % over the best cheaper one.  An f that jumps across the output range between two
    adjacent codes inside the range (an interior pole: tan beyond +-pi/2) is refused first: no term
    can step by more than 32767 between entries.  Tiers 2 and 3 are skipped when one table errs by more
    than 64 LSB (a singularity: only tiling helps there).  A candidate counts only if it is
    exact-checked on every code: no int32 overflow, TOSA's REQUIREs hold, and its output never steps
    against f (monotone where f is).  Zero points are 0 (int16 activations are symmetric).

    Raises:
        QuantizationError: ``out_scale`` is not a positive finite number; f jumps by more than
            :data:`JUMP_LSB` between adjacent codes (:func:`_refuse_jumps`);
            else as :func:`build_table_int16` (the one-table form is always built).
    """
    _check_out_scale(out_scale)  # before the tiled fallback, which would divide by it
    codes = np.arange(-32768, 32768, dtype=np.int64)
    with np.errstate(all="ignore"):
        exact = np.clip(_eval_f64(f, _clip_to_domain(codes * np.float64(in_scale), domain)) / np.float64(out_scale),
                        -32768.0, 32767.0)
    _refuse_jumps(exact, in_scale, out_scale)  # no form follows a jump across the whole output range
    try:
        y, _ = _table16_target(f, in_scale, out_scale, domain)  # every code and the virtual +32768
    except QuantizationError as steep:  # f jumps more than a table slope: only a tiled plan can follow
        return _tiled_or_raise(f, in_scale, out_scale, domain, steep)
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

    def consider(plans, first_within: bool = False) -> Table16Plan | None:
        tier = []
        for make in plans:
            try:
                plan = make()
            except QuantizationError:
                continue
            e = score(plan)
            if e is not None:
                tier.append((e, plan))
                if first_within and e <= TABLE16_SPLIT_ABOVE_LSB:
                    break
        scored.extend(tier)
        if first_within:
            within = [p for e, p in tier if e <= TABLE16_SPLIT_ABOVE_LSB]
            return within[0] if within else None
        tier.sort(key=lambda t: t[0])
        return tier[0][1] if tier and tier[0][0] <= TABLE16_SPLIT_ABOVE_LSB else None

    single = Table16Plan((Table16Term(0, build_table_int16(f, in_scale, out_scale, domain=domain)),))
    e1 = score(single)
    if e1 is None or e1 <= TABLE16_SPLIT_ABOVE_LSB:
        return single
    scored.append((e1, single))
    tiers = []
    if e1 <= _CLASSIC_FORMS_BELOW_LSB:
        tiers += [
            [lambda: build_table_int16_split(f, in_scale, out_scale, domain=domain)]
            + [lambda k=k: build_table_int16_zoom(f, in_scale, out_scale, k, split=False, domain=domain) for k in (1, 2)],
            [lambda k=k: build_table_int16_zoom(f, in_scale, out_scale, k, domain=domain) for k in (1, 2, 3)],
        ]
    for tier in tiers:
        chosen = consider(tier)
        if chosen is not None:
            return chosen
    # tiled: the first chord target that reaches the bound (coarser zooms are cheaper)
    chosen = consider([lambda c=c: build_table_int16_tiled(f, in_scale, out_scale, domain=domain, chord_lsb=c)
                       for c in _TILED_CHORDS_LSB], first_within=True)
    if chosen is not None:
        return chosen
    return most_accurate(scored)  # none within 1 LSB


#: Adjacent input codes whose exact outputs differ by more than this (output LSB) are a jump no int16
#: table term can take (TOSA TABLE's REQUIRE: adjacent entries differ by at most 32767).
JUMP_LSB = 32767.0


def _refuse_jumps(target: np.ndarray, in_scale: float, out_scale: float) -> None:
    """Raise when the exact outputs (``target``, output LSB at every code, clipped to int16) jump by more
    than :data:`JUMP_LSB` between two adjacent input codes inside the range: a pole or discontinuity of f
    (tan at +-pi/2 on an input grid wider than +-1.57), which no plan follows within 1 LSB."""
    step = np.abs(np.diff(target))
    at = np.flatnonzero(step > JUMP_LSB)
    if at.size:
        c = int(at[0]) - 32768
        raise QuantizationError(
            f"f jumps by {step[at[0]]:.0f} output LSB between input codes {c} and {c + 1} (x = "
            f"{c * in_scale:.6g} .. {(c + 1) * in_scale:.6g}, output scale {out_scale:.3g}): a pole or discontinuity "
            f"inside the input range ({at.size} such step{'s' if at.size > 1 else ''}), which no int16 table follows; "
            "keep the op's input range on one side of it")


def most_accurate(scored: list[tuple[float, Table16Plan]]) -> Table16Plan:
    """The plan to take when none reaches 1 LSB: from the cheapest (fewest IR ops) up, a costlier plan
    replaces the choice only when it cuts the max error (output LSB, first item) by 10 %.

    Raises:
        IndexError: ``scored`` is empty (the one-table form is always scored first).
    """
    scored = sorted(scored, key=lambda t: (t[1].n_ops, t[0]))
    e, choice = scored[0]
    for e2, plan in scored[1:]:
        if e2 < 0.9 * e:
            e, choice = e2, plan
    return choice


def _tiled_or_raise(f, in_scale: float, out_scale: float, domain, steep: QuantizationError) -> Table16Plan:
    """A tiled plan within 1 LSB for an f whose plain table breaks the slope limit (a pole next to the
    range's codes, e.g. log over +-1000), else ``steep`` itself (the message says what to change)."""
    codes = np.arange(-32768, 32768, dtype=np.int64)
    with np.errstate(all="ignore"):
        x = _clip_to_domain(codes * np.float64(in_scale), domain)
        y = np.clip(_eval_f64(f, x) / np.float64(out_scale), -32768.0, 32767.0)
    for c in _TILED_CHORDS_LSB:
        try:
            plan = build_table_int16_tiled(f, in_scale, out_scale, domain=domain, chord_lsb=c)
            dev = table16_apply(plan, codes)
        except QuantizationError:
            continue
        if float(np.abs(dev - y).max()) <= TABLE16_SPLIT_ABOVE_LSB and _monotone_where_f_is(dev, y, float(y[-1])):
            return plan
    raise steep
