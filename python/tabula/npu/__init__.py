"""Ethos-U NPU targets: one graph, two engines.

The IR is exported whole as TOSA 1.0; for an NPU target it is cut into NPU segments (what Vela compiles for
that accelerator) and CPU segments (tabula's own kernels), and nothing fails to build because one op cannot
run on the NPU: it runs on the CPU, and the plan says why.  One job per module:

* :mod:`.targets` -- the accelerators (Vela's names, family, MACs, the FVP that models them);
* :mod:`.capabilities` -- per family and IR op, Vela's documented TOSA constraints, as data;
* :mod:`.legalize_softmax_pass` -- the NPU form of the softmax (no INTDIV, REDUCE_MAX on int8 / int16);
* :mod:`.partition` -- mark each op NPU or CPU, cut the segments, a segment's own graph;
* :mod:`.vela` -- run Vela on one flatbuffer (argument vector), read its npz, summary and per-layer table;
* :mod:`.compile` -- compile every NPU segment; a refused op is found (binary search) and moved to the CPU;
* :mod:`.config` -- a board's ``[npu]`` (base, IRQ, the regions behind Vela's AXI ports) with ``vela.ini``;
* :mod:`.plan` -- the build's ``npu/plan.json`` and per-segment command streams and weights.

``tabula quantize --npu <target>`` applies :func:`legalize` to the lowered IR; ``tabula npu`` writes the
plan (:func:`compile_npu`); ``tabula codegen --npu-plan`` emits the segments' glue; the firmware calls
``ethosu_invoke_v3`` per NPU segment (``firmware_templates/runtime/tabula_npu.c``).
"""
from __future__ import annotations

from pathlib import Path

from ..ir import Graph
from .config import NpuConfig, npu_config
from .legalize_softmax_pass import legalize_softmax
from .plan import build_plan, load_plan
from .targets import TARGETS, NpuTarget, get_target

__all__ = ["TARGETS", "NpuTarget", "NpuConfig", "get_target", "npu_config", "legalize", "compile_npu", "load_plan"]


def legalize(g: Graph, target: str) -> tuple[Graph, list[str]]:
    """``g`` rewritten for NPU ``target`` (every softmax in its NPU form: :mod:`.legalize_softmax_pass`),
    and one line per softmax that keeps its CPU form.  ``g`` is not modified.

    Raises:
        tabula.errors.StageError: an unknown target."""
    get_target(target)
    return legalize_softmax(g)


def compile_npu(g: Graph, target: str, board: str, out_dir: str | Path, model: str = "model") -> dict:
    """Partition ``g`` for ``target`` on ``board`` (a board name), compile its NPU segments with Vela and
    write ``out_dir/plan.json`` and the segments' files (:func:`tabula.npu.plan.build_plan`); returns the plan.

    Raises:
        tabula.errors.StageError: an unknown target; Vela missing or crashed.
        tabula.errors.BoardError: the board has no Ethos-U of that family or a bad ``[npu]`` table.
    """
    from ..boards import load_board

    return build_plan(g, npu_config(load_board(board), target), out_dir, model)
