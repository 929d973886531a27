"""``scheme="mixed"``: int8 or int16 activations per layer, chosen from measured sensitivity.

1. Quantize the model twice with the real quantizer, all int8 and all int16 (the ``int8`` and ``a16w8``
   schemes), on the calibration data; every grid of a mixed program is one of those two
   (:mod:`tabula.quantizer.sensitivity`).
2. Measure on (at most :data:`MAX_SAMPLES` of) the calibration samples, for every layer
   (:mod:`tabula.quantizer.precision`) alone -- everything else float --: the output noise of its
   activations in int8 and in int16, and of its int8 weights; and the whole model in int8 and in a16w8.
3. Estimate every layer's instruction cost in either dtype (:mod:`tabula.quantizer.costs`, the board's
   cost model) and choose, greedily by noise removed per instruction added, the int16 layers: until the
   simulated output SQNR reaches ``target_sqnr``, or while the estimated instructions stay within
   ``budget``; where no single layer removes noise in the mix, the best pair of the best-ranked
   (:data:`PAIR_POOL`) does.  Layers whose int16 noise is not below their int8 noise are never chosen; the user's
   overrides (``precision=``) are kept as given.  A target is checked on the simulation of the whole
   mix (the per-layer noises are an estimate: they add only roughly), and layers that the target does
   not need are dropped again, costliest first.  A mix's noise is its activations' (the mix simulated
   with float weights) plus the int8 weights' (float activations): simulated together, the two partly
   cancel on the calibration samples by chance, and a choice steered by that luck loses up to a dB
   on other inputs (the trained MobileNet of ``benchmarks/mixed_mobilenet.py``: 1.1 dB under a16w8 on
   its test images against 0.6 dB measured apart).
4. Quantize once more with that choice (:class:`tabula.quantizer.precision.PrecisionMap`).

Default (neither given): the target is the better of the int8 and a16w8 SQNRs on the calibration data
less :data:`DEFAULT_MARGIN_DB`, within a budget of :data:`DEFAULT_BUDGET_FACTOR` times int8's estimated
instructions, so the mix is about as accurate as the more accurate scheme at a fraction of a16w8's cost
(where the budget cannot buy the target, the choice is the most accurate the budget buys, and ``met`` is
False); a model that int8 already serves (weights-limited: a16w8 no better) stays int8.

The result is a :class:`Choice` (per layer: scheme, cost, gain and the three sensitivities), printed by
:meth:`Choice.table` and saved by the build as ``precision.json``.
"""
from __future__ import annotations

import copy
import math

from .choice import Choice, LayerChoice
from .precision import PRECISIONS, PrecisionMap, layers, resolve_overrides

__all__ = ["MAX_SAMPLES", "DEFAULT_MARGIN_DB", "DEFAULT_BUDGET_FACTOR", "Choice", "LayerChoice", "choose", "quantize_mixed"]

#: At most this many calibration samples are simulated per configuration (the first ones, in order).
MAX_SAMPLES = 128

#: The default target: the better of int8 and a16w8 on the calibration data, less this (dB).
DEFAULT_MARGIN_DB = 0.5

#: The default budget: this many times int8's estimated instructions (issue 24: at most 1.5x int8).
DEFAULT_BUDGET_FACTOR = 1.5

#: Each greedy step simulates this many of the best-ranked candidates in the mix.
TRIALS_PER_STEP = 3

#: When no single candidate removes noise in the mix, the greedy tries the pairs of this many best-ranked ones.
PAIR_POOL = 8


def choose(sim, all_layers, cost, forced: dict[str, str], target_sqnr: float | None = None,
           budget: float | None = None, board: str = "corstone300") -> Choice:
    """The int16 layers (module docstring, steps 2-3).

    Args:
        sim: a :class:`tabula.quantizer.sensitivity.Simulator` of the model.
        all_layers: its :func:`tabula.quantizer.precision.layers`.
        cost: ``cost(precision: dict layer -> scheme) -> (total, per-layer dict)`` estimated
            instructions (:func:`tabula.quantizer.costs.model_cost` bound to the graph and board).
        forced: layer -> scheme from the user (:func:`tabula.quantizer.precision.resolve_overrides`).
        target_sqnr / budget: as :func:`tabula.quantizer.quantize`; neither: the default target.
    Returns:
        The :class:`Choice`; ``met`` False when the target cannot be reached (within the budget).
    """
    names = [lay.name for lay in all_layers]
    grids = sim.layers_of_grids()
    all8 = {n: "int8" for n in names}
    all16 = {n: "a16w8" for n in names}
    n_weights = sim.noise({})

    def noise(p) -> float:
        # the mix's activation noise (float weights) plus the int8 weights' noise (float activations),
        # measured apart: on a few calibration samples the two partly cancel by chance, and a choice
        # steered by those cancellations does not hold on other inputs
        return sim.noise(p, ()) + n_weights

    n_int8, n_int16 = noise(all8), noise(all16)
    s8, s16, sw = sim.sqnr(n_int8), sim.sqnr(n_int16), sim.sqnr(n_weights)
    alone = {}
    for lay in all_layers:
        if lay.name not in grids:
            alone[lay.name] = (math.inf, math.inf, None)
            continue
        a8, a16 = sim.noise({lay.name: "int8"}, ()), sim.noise({lay.name: "a16w8"}, ())
        w = [n for n in lay.nodes if n in sim.weighted]
        nw = sim.sqnr(sim.noise({}, w)) if w else None
        alone[lay.name] = (a8, a16, nw)
    chosen = {n: forced.get(n, "int8") for n in names}
    if target_sqnr is None and budget is None:
        target_sqnr = max(s8, s16) - DEFAULT_MARGIN_DB
        budget = DEFAULT_BUDGET_FACTOR * max(cost(chosen)[0], cost(all8)[0])
    free = [n for n in names if n not in forced and n in grids and alone[n][0] > alone[n][1]]

    def total(p):
        return cost(p)[0]

    def meets(noise) -> bool:
        return target_sqnr is None or sim.sqnr(noise) >= target_sqnr

    current = noise(chosen)
    # greedy: rank the candidates by their noise alone removed per instruction added, simulate the
    # best few in the mix and take the one that really removes most noise per instruction
    while free and not (target_sqnr is not None and meets(current)):
        base = total(chosen)
        ranked = []
        for n in free:
            trial = dict(chosen, **{n: "a16w8"})
            extra = total(trial) - base
            if budget is not None and base + extra > budget:
                continue
            ranked.append(((alone[n][0] - alone[n][1]) / max(extra, 1.0), n, trial, extra))
        ranked.sort(key=lambda t: -t[0])
        best = None
        # the best few, then the next few while none of them removes noise in the mix (a layer whose noise
        # alone ranks it low may still be the one that helps: the estimates add only roughly)
        for start in range(0, len(ranked), TRIALS_PER_STEP):
            for _, n, trial, extra in ranked[start:start + TRIALS_PER_STEP]:
                removed = current - noise(trial)
                if removed > 0 and (best is None or removed / max(extra, 1.0) > best[0]):
                    best = (removed / max(extra, 1.0), n, trial)
            if best is not None:
                break
        if best is None:
            # none alone removes noise in the mix: two neighbours' grids may (the noise of a layer's int8 grid
            # and of the next one's partly cancel), so try pairs of the best-ranked candidates
            pool = ranked[:PAIR_POOL]
            for i, (_, n, trial, extra) in enumerate(pool):
                for _, n2, _, _ in pool[i + 1:]:
                    both = dict(trial, **{n2: "a16w8"})
                    added = total(both) - base
                    if budget is not None and base + added > budget:
                        continue
                    removed = current - noise(both)
                    if removed > 0 and (best is None or removed / max(added, 1.0) > best[0]):
                        best = (removed / max(added, 1.0), (n, n2), both)
        if best is None:
            break
        _, n, chosen = best
        for m in (n if isinstance(n, tuple) else (n,)):
            free.remove(m)
        current = noise(chosen)
    # drop what the target does not need, the one saving most instructions first, until none can go
    while target_sqnr is not None and meets(current):
        picked = [n for n in names if chosen[n] == "a16w8" and n not in forced]
        for n in sorted(picked, key=lambda n: -(total(chosen) - total(dict(chosen, **{n: "int8"})))):
            trial = dict(chosen, **{n: "int8"})
            if meets(noise(trial)):
                chosen, current = trial, noise(trial)
                break
        else:
            break
    s_mixed = sim.sqnr(current)
    totals = {"int8": cost(all8), "a16w8": cost(all16), "mixed": cost(chosen)}
    out = []
    for lay in all_layers:
        n = lay.name
        a8, a16, nw = alone[n]
        flip = dict(chosen, **{n: "int8" if chosen[n] == "a16w8" else "a16w8"})
        c_flip = cost(flip)[1].get(n, 0.0)
        c_here = totals["mixed"][1].get(n, 0.0)
        c8, c16 = (c_here, c_flip) if chosen[n] == "int8" else (c_flip, c_here)
        if n not in grids:
            gain = None
        elif chosen[n] == "a16w8":
            gain = s_mixed - sim.sqnr(noise(flip))
        else:
            rest = current - (a8 - a16)
            gain = sim.sqnr(rest) - s_mixed if rest > 0 else math.inf
        out.append(LayerChoice(n, lay.label, lay.op, chosen[n], n in forced, c8, c16,
                               None if gain is None else round(gain, 2), round(sim.sqnr(a8), 2),
                               round(sim.sqnr(a16), 2), None if nw is None else round(nw, 2)))
    met = (target_sqnr is None or s_mixed >= target_sqnr) and (budget is None or totals["mixed"][0] <= budget)
    return Choice(board, len(sim.samples), None if target_sqnr is None else round(float(target_sqnr), 2), budget,
                  round(s8, 2), round(s16, 2), round(sw, 2), round(s_mixed, 2), totals["int8"][0],
                  totals["a16w8"][0], totals["mixed"][0], out, met)


def quantize_mixed(model, example_inputs: tuple, calibration, table_output=None, observer: str = "auto",
                   precision: dict | None = None, target_sqnr: float | None = None, budget: float | None = None,
                   board: str | None = None, report=None):
    """:func:`tabula.quantizer.quantize` with ``scheme="mixed"`` (module docstring).  ``board``: whose
    cost model (default ``corstone300``, the Cortex-M55 with Helium); ``report``: called with the
    :class:`Choice`.  Returns the converted graph of the choice, with ``meta["tabula_precision"]`` =
    the :class:`Choice`.  Raises as :func:`tabula.quantizer.quantize`, and ValueError for a budget or
    target that is not a finite number."""
    from .annotator import TabulaQuantizer
    from .costs import cost_model
    from .flow import _batches, float_graph, quantize_graph
    from .sensitivity import Simulator

    for what, v in (("target_sqnr", target_sqnr), ("budget", budget)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v)):
            raise ValueError(f"{what}={v!r} must be a finite number")
    if budget is not None and budget <= 0:
        raise ValueError(f"budget={budget!r} must be a positive number of instructions per inference")
    board = board or "corstone300"
    example_inputs = tuple(example_inputs)
    samples = list(_batches(calibration))  # checked once; reused by the three quantizations and the simulation
    fg = float_graph(model, example_inputs, None)
    all_layers = layers(fg)
    forced = resolve_overrides(all_layers, precision)
    g8 = quantize_graph(copy.deepcopy(fg), TabulaQuantizer("int8", table_output, observer=observer), example_inputs, samples)
    g16 = quantize_graph(copy.deepcopy(fg), TabulaQuantizer("a16w8", table_output, observer=observer), example_inputs,
                         samples)
    sim = Simulator(fg, g8, g16, samples[:MAX_SAMPLES])
    cost = cost_model(fg, board)
    choice = choose(sim, all_layers, cost, forced, target_sqnr, budget, board)
    if report is not None:
        report(choice)
    gm = quantize_graph(copy.deepcopy(fg), TabulaQuantizer("int8", table_output, observer=observer,
                                                             precision=PrecisionMap(choice.precision)),
                        example_inputs, samples)
    gm.meta["tabula_precision"] = choice
    return gm


assert PRECISIONS == ("int8", "a16w8")
