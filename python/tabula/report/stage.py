"""The report's stages: what the quantize and float stages add (``calibration.json``, ``layers.json``,
torch), the report of a build folder (``tabula report``; the run stage's ``--report``; no torch) and
``tabula analyze`` (:func:`tabula.stages.analyze_stage`: all of it in one process, no device).

``calibration.json``: ``{"tensors": {IR tensor: calibration_stats}}`` over the first
:data:`~tabula.report.layers.CALIBRATION_SAMPLES` calibration samples.  ``layers.json``: ``{"note",
"tensors": {IR tensor: layer_errors}, "weights": {IR op: weight_errors}}`` over the first
:data:`~tabula.report.layers.LAYER_SAMPLES` test samples (:mod:`tabula.report.layers`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import layers as L

__all__ = ["calibration_file", "calibration_data", "layers_file", "analyze_layers", "build_folder_report", "print_warnings",
           "float_model"]


def _example(ep, x: np.ndarray):
    import torch

    ex = tuple(ep.example_inputs[0]) if getattr(ep, "example_inputs", None) else ()
    return ex or (torch.from_numpy(x[:1]),)


def float_model(model, x: np.ndarray):
    """The :class:`tabula.report.float_model.FloatModel` of ``model`` (an ExportedProgram), with its own example
    input or ``x[:1]``."""
    from .float_model import FloatModel

    return FloatModel(model, _example(model, x))


def calibration_data(program, fm, x: np.ndarray) -> dict:
    """:func:`tabula.report.layers.calibration_stats` of ``program`` on calibration inputs ``x`` (float,
    PyTorch layout, ``[n, ...]``; at most CALIBRATION_SAMPLES used) through the float model ``fm``."""
    from ..progress import iterate

    m = L.float_counterparts(program.graph, fm.shapes)
    x = x[: L.CALIBRATION_SAMPLES]
    values = iterate(fm.activations([x], {n for n, _ in m.values()}), "calibration statistics", "sample", total=len(x))
    return L.calibration_stats(program.graph, m, values)


def calibration_file(program, model, x: np.ndarray, path) -> dict:
    """Write ``calibration.json`` (module docstring) for ``program`` quantized from ``model`` (an
    ExportedProgram) on calibration inputs ``x``; returns its ``tensors``."""
    from ..files import write_json

    stats = calibration_data(program, float_model(model, x), x)
    write_json(path, {"samples": int(min(len(x), L.CALIBRATION_SAMPLES)), "tensors": stats})
    return stats


def analyze_layers(program, fm, x: np.ndarray, limit: int | None = None) -> dict:
    """``layers.json``'s content for ``program`` on test inputs ``x`` (at most ``limit`` samples, default
    all) through the float model ``fm``: the per-tensor errors and the weight errors."""
    from ..progress import iterate
    from .float_model import weight_errors

    m = L.float_counterparts(program.graph, fm.shapes)
    if limit:
        x = x[:limit]
    acts = fm.activations([x], {n for n, _ in m.values()})
    samples = iterate(((program.quantize_inputs(x[i : i + 1]), a) for i, a in enumerate(acts)),
                      "per-layer error", "sample", total=len(x))
    return {"note": f"per-layer SQNR over {len(x)} sample(s) of the test data", "samples": int(len(x)),
            "tensors": L.layer_errors(program.graph, m, samples), "weights": weight_errors(program.graph, fm)}


def layers_file(program, model, x: np.ndarray, path) -> dict:
    """Write ``layers.json`` (module docstring) for ``program`` on the first LAYER_SAMPLES test inputs
    ``x``; ``model`` is the float ExportedProgram.  Returns the content."""
    from ..files import write_json

    data = analyze_layers(program, float_model(model, x), x, L.LAYER_SAMPLES)
    write_json(path, data)
    return data


def print_warnings(rep: dict, file=None) -> None:
    """The report's warnings on the console, one ``warning:`` line each (control characters escaped)."""
    import sys

    from . import printable

    for w in rep.get("warnings") or []:
        print(f"tabula: warning: {printable(w['text'])}", file=file or sys.stdout)


def build_folder_report(out_dir, board=None, portable: bool = False, results: dict | None = None) -> tuple[dict, list[Path]]:
    """Write ``report.html`` / ``report.md`` / ``report.json`` of the build folder ``out_dir``
    (:func:`tabula.report.analysis.from_build`); returns the report and the paths.

    Raises:
        MissingFileError, IRError: no readable IR in ``out_dir``; StageError: the files cannot be written."""
    from .analysis import from_build
    from .render import write_report

    rep = from_build(out_dir, board, portable, results)
    return rep, write_report(rep, out_dir)
