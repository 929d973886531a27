"""Compile every NPU segment with Vela, and never fail because of one op.

With TOSA input Vela has no CPU fallback: one operator it cannot place fails the whole segment.  When that
happens :func:`compile_segments` finds the op it refuses -- a binary search for the shortest prefix of the
segment (cut only between :func:`tabula.npu.partition.units`, so an int48 value stays with its producer)
that Vela refuses; its last unit is the culprit -- moves it to the CPU with Vela's message as the reason,
cuts the graph again and recompiles.  Each refusal moves at least one op, so the loop ends; a graph whose
every op Vela refuses runs on the CPU alone.  Compiles are cached by op list, so a segment that did not
change is not compiled twice.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..ir import Graph
from .partition import CPU, NPU, Segment, cut, subgraph, tie_int48, units
from .vela import PINNED_VERSION, VelaRefused, VelaResult, compile_tosa

__all__ = ["CompiledSegment", "compile_segments"]


@dataclass
class CompiledSegment:
    """A segment and, for an NPU one, what Vela made of it (``vela``) and which IR tensor each TOSA tensor
    holds (``tosa_names``: TOSA tensor -> IR tensor, to map Vela's per-layer rows back to IR ops)."""

    segment: Segment
    vela: VelaResult | None = None
    tosa_names: dict | None = None


def _serialize(g: Graph, ops: list[int]) -> tuple[bytes, dict]:
    from ..tosa import serialize

    names: dict = {}
    return serialize(subgraph(g, ops), names=names), names


def compile_segments(g: Graph, engines: list[str], reasons: list[str], accelerator: str, system_config: str,
                     memory_mode: str, out_dir: str | Path,
                     compiler: Callable[..., VelaResult] = compile_tosa) -> tuple[list[CompiledSegment], int]:
    """Cut ``g`` by ``engines`` (updated in place, with ``reasons``, when Vela refuses an op) and compile each
    NPU segment (Vela's files of the last compile stay in ``out_dir/vela/``).  Returns the compiled segments (graph order) and how many
    compiles ran.  ``compiler``: :func:`tabula.npu.vela.compile_tosa` (a test may pass another).

    Raises:
        tabula.npu.vela.VelaMissing: Vela is not installed.
        tabula.errors.StageError: Vela crashed or timed out (not a refusal).
    """
    out = Path(out_dir)
    cache: dict[tuple[int, ...], VelaResult | VelaRefused] = {}
    names_of: dict[tuple[int, ...], dict] = {}
    n_compiles = 0

    def attempt(ops: list[int]) -> VelaResult | VelaRefused:
        nonlocal n_compiles
        key = tuple(ops)
        if key not in cache:
            fb, names = _serialize(g, ops)
            n_compiles += 1
            try:
                cache[key] = compiler(fb, out / "vela", accelerator, system_config, memory_mode, name="segment")
            except VelaRefused as e:
                cache[key] = e
            names_of[key] = names
        return cache[key]

    while True:
        segs = cut(g, engines)
        idle = [s for s in segs if s.engine == NPU and (not s.inputs or not s.outputs)]
        for s in idle:  # nothing to copy in (constants only) or out (dead code): not worth an NPU call
            for i in s.ops:
                engines[i] = CPU
                reasons[i] = ("its NPU segment would read no tensor of the model (constants only)" if not s.inputs
                              else "its NPU segment would produce nothing the model reads")
        if idle:
            continue
        refused = None
        for s in segs:
            if s.engine == NPU and isinstance(attempt(s.ops), VelaRefused):
                refused = s
                break
        if refused is None:
            break
        pieces = units(g, refused.ops)
        lo, hi = 0, len(pieces)  # pieces[:lo] compiles (empty: trivially), pieces[:hi] is refused
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if isinstance(attempt([i for p in pieces[:mid] for i in p]), VelaRefused):
                hi = mid
            else:
                lo = mid
        culprit = pieces[hi - 1]
        why = attempt([i for p in pieces[:hi] for i in p])
        alone = attempt(culprit)
        reason = why.reason if isinstance(why, VelaRefused) else str(why)
        if not isinstance(alone, VelaRefused):
            reason += " (it compiles alone, not after the ops before it)"
        for i in culprit:
            engines[i] = CPU
            reasons[i] = f"Vela {PINNED_VERSION} refused it: {reason}"
        tie_int48(g, engines, reasons)

    return [CompiledSegment(s, cache[tuple(s.ops)], names_of[tuple(s.ops)]) if s.engine == NPU else CompiledSegment(s)
            for s in segs], n_compiles
