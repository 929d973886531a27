"""The report's stages: what the quantize and float stages add (``calibration.json``, ``layers.json``,
torch), the report of a build folder (``tabula report``; the run stage's ``--report``; no torch) and
``tabula analyze`` (:func:`tabula.stages.analyze_stage`: all of it in one process, no device).

``calibration.json``: ``{"tensors": {IR tensor: calibration_stats}}`` over the first
:data:`~tabula.report.layers.CALIBRATION_SAMPLES` calibration samples (the quantize stage).
``float_layers.npz``: the float model's activations on the first test samples (the float stage, torch);
the run stage compares them with the reference's intermediates of the same samples, which it computes
anyway, into ``layers.json``: ``{"note", "tensors": {IR tensor: layer_errors}, "weights": {IR op:
weight_errors}}`` (:mod:`tabula.report.layers`): no reference inference runs twice.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import layers as L

__all__ = ["calibration_file", "calibration_data", "float_layers_file", "read_float_layers", "layers_from_run",
           "analyze_layers", "build_folder_report", "print_warnings", "float_model"]


def _inputs(xs) -> list[np.ndarray]:
    """The model's inputs: one array ``[n, ...]`` per input (a single array: a one-input model)."""
    return [xs] if isinstance(xs, np.ndarray) else list(xs)


def _example(ep, xs):
    import torch

    ex = tuple(ep.example_inputs[0]) if getattr(ep, "example_inputs", None) else ()
    return ex or tuple(torch.from_numpy(x[:1]) for x in _inputs(xs))


def float_model(model, xs):
    """The :class:`tabula.report.float_model.FloatModel` of ``model`` (an ExportedProgram), with its own example
    inputs or the first sample of ``xs`` (an array, or one per model input)."""
    from .float_model import FloatModel

    return FloatModel(model, _example(model, xs))


def calibration_data(program, fm, xs) -> dict:
    """:func:`tabula.report.layers.calibration_stats` of ``program`` on calibration inputs ``xs`` (float,
    PyTorch layout, ``[n, ...]``: an array, or one per model input; at most CALIBRATION_SAMPLES used)
    through the float model ``fm``."""
    from ..progress import iterate

    m = L.float_counterparts(program.graph, fm.shapes)
    xs = [x[: L.CALIBRATION_SAMPLES] for x in _inputs(xs)]
    values = iterate(fm.activations(xs, {n for n, _ in m.values()}), "calibration statistics", "sample",
                     total=len(xs[0]))
    return L.calibration_stats(program.graph, m, values)


def calibration_file(program, model, xs, path) -> dict:
    """Write ``calibration.json`` (module docstring) for ``program`` quantized from ``model`` (an
    ExportedProgram) on calibration inputs ``xs`` (an array, or one per model input); returns its ``tensors``."""
    from ..files import write_json

    xs = _inputs(xs)
    stats = calibration_data(program, float_model(model, xs), xs)
    write_json(path, {"samples": int(min(len(xs[0]), L.CALIBRATION_SAMPLES)), "tensors": stats})
    return stats


def analyze_layers(program, fm, xs, limit: int | None = None) -> dict:
    """``layers.json``'s content for ``program`` on test inputs ``xs`` (an array, or one per model input; at
    most ``limit`` samples, default all) through the float model ``fm``: the per-tensor errors and the
    weight errors."""
    from ..progress import iterate
    from .float_model import weight_errors

    m = L.float_counterparts(program.graph, fm.shapes)
    xs = _inputs(xs)
    if limit:
        xs = [x[:limit] for x in xs]
    n = len(xs[0])
    acts = fm.activations(xs, {node for node, _ in m.values()})
    samples = iterate(((program.quantize_inputs(*(x[i : i + 1] for x in xs)), a) for i, a in enumerate(acts)),
                      "per-layer error", "sample", total=n)
    return {"note": f"per-layer SQNR over {n} sample(s) of the test data", "samples": int(n),
            "tensors": L.layer_errors(program.graph, m, samples), "weights": weight_errors(program.graph, fm)}


def float_layers_file(program, model, xs, path, digest=None) -> int:
    """Write ``float_layers.npz``: the float model's value of every IR tensor with a float counterpart
    (:func:`tabula.report.layers.float_counterparts`; ``t/<tensor>`` float32 ``[n, *the tensor's shape]``:
    sample i at ``[i]``, in the tensor's layout) on the first test inputs ``xs`` (an array, or one per model input; at most LAYER_SAMPLES, and
    LAYER_BYTES of values), with
    ``nodes`` (the JSON of tensor -> node), ``weights`` (the JSON of :func:`weight_errors`) and
    ``data_sha256`` (``digest(samples)``, of the samples kept).  The run stage compares them with the reference's
    intermediates of the same samples (:func:`layers_from_run`).  ``model``: the float ExportedProgram.
    Returns the number of samples kept."""
    import json

    from ..files import write_atomic
    from ..progress import iterate
    from .float_model import weight_errors

    xs = _inputs(xs)
    fm = float_model(model, xs)
    m = L.float_counterparts(program.graph, fm.shapes)
    per_sample = sum(program.graph.tensors[t].numel * 4 for t in m) or 1
    n = int(min(len(xs[0]), L.LAYER_SAMPLES, max(1, L.LAYER_BYTES // per_sample)))
    xs = [x[:n] for x in xs]
    keep: dict[str, list] = {t: [] for t in m}
    for values in iterate(fm.activations(xs, {node for node, _ in m.values()}), "float activations", "sample", total=n):
        for t, (node, transpose) in m.items():
            v = values[node]
            keep[t].append(L.as_ir(v, transpose).astype(np.float32))
    # one entry per sample on a new leading axis: a tensor's own first dim need not be the batch (a
    # TRANSPOSE [1, 49, 32] -> [49, 1, 32]), so the samples are not joined along it
    arrays = {f"t/{t}": np.stack(v) for t, v in keep.items() if v}
    nodes = {t: node for t, (node, _) in m.items()}
    weights = weight_errors(program.graph, fm)
    write_atomic(path, lambda tmp: np.savez(tmp, nodes=np.array(json.dumps(nodes)), weights=np.array(json.dumps(weights)),
                                            data_sha256=np.array(digest(xs) if digest else ""), n=np.array(n),
                                            **arrays))
    return n


def read_float_layers(path) -> dict | None:
    """What :func:`float_layers_file` wrote (``floats``: tensor -> array, ``nodes``, ``weights``, ``n``,
    ``data_sha256``), or None when the file is missing or unreadable."""
    import json

    try:
        with np.load(path, allow_pickle=False) as z:
            floats = {k[2:]: np.asarray(z[k]) for k in z.files if k.startswith("t/")}
            return {"floats": floats, "nodes": json.loads(str(z["nodes"])), "weights": json.loads(str(z["weights"])),
                    "n": int(z["n"]), "data_sha256": str(z["data_sha256"])}
    except (OSError, KeyError, ValueError):
        return None


def layers_from_run(program, float_layers: dict, traces: list[dict]) -> dict:
    """``layers.json``'s content from the float stage's values (:func:`read_float_layers`) and the run
    stage's reference intermediates of the same samples (``traces``)."""
    n = min(len(traces), float_layers["n"])
    return {"note": f"per-layer SQNR over {n} sample(s) of the test data", "samples": n,
            "tensors": L.traced_errors(program.graph, float_layers["floats"], traces[:n], float_layers["nodes"]),
            "weights": float_layers["weights"]}


def print_warnings(rep: dict, file=None) -> None:
    """The report's warnings on the console, one ``warning:`` line each (control characters escaped)."""
    import sys

    from . import printable

    for w in rep.get("warnings") or []:
        print(f"tabula: warning: {printable(w['text'])}", file=file or sys.stdout)


def build_folder_report(out_dir, board=None, portable: bool = False, results: dict | None = None, ir_dir=None,
                        src_dir=None) -> tuple[dict, list[Path]]:
    """Write ``report.html`` / ``report.md`` / ``report.json`` of the build folder ``out_dir`` into it
    (:func:`tabula.report.analysis.from_build`: the IR in ``ir_dir``, codegen's files in ``src_dir``);
    returns the report and the paths.

    Raises:
        MissingFileError, IRError: no readable IR in ``out_dir``; StageError: the files cannot be written."""
    from .analysis import from_build
    from .render import write_report

    rep = from_build(out_dir, board, portable, results, ir_dir, src_dir)
    return rep, write_report(rep, out_dir)
