"""Each layer's error against the float model, and each activation grid against its calibration values.

**Matching IR tensors to the float graph.**  The lowering names the IR tensor a ``quantize_per_tensor``
node writes after the FX node it quantizes (``LoweringContext.output(node)`` -> ``node.name``; a fused
activation's producer writes the activation's tensor, named after the activation), and the float graph
tabula quantizes (:func:`tabula.quantizer.float_graph`: captured, identities removed, constants and
BatchNorms folded) keeps those node names.  So an int8 / int16 activation tensor whose name is a float
node's, and whose shape is that node's value's (4-D: its NHWC transpose, always), is that node's value in float;
a ``<name>_requant`` tensor (a RESCALE to another grid, e.g. a concat's shared one) is ``<name>``'s
value on the other grid; a ``<name>_nhwc_view`` tensor ``[N, 1, L, C]`` is the 3-D ``[N, C, L]`` value of
``<name>`` in the NHWC view a 1-D conv runs on (``lowering/ops/_view1d.py``; the layout pass keeps
Conv1d stacks in it: :mod:`tabula.lowering.simplify_layout_pass`).  Everything else (accumulators, a fused activation's pre-clamp temporary, the
steps of an int16 table plan or a softmax, a TRANSPOSE's NCHW copy) has no float counterpart: its row
in the report has no SQNR, the row of the op that writes the node's tensor has it.

:func:`float_counterparts` makes the match; :func:`layer_errors` runs the integer reference with every
intermediate (:func:`tabula.reference.interpreter.run_graph` ``trace``) beside the float model's
activations (:func:`tabula.report.float_model.float_activations`) and accumulates, per matched tensor,
the SQNR of its dequantized values against the float node's over the samples;
:func:`calibration_stats` measures each matched grid against the float values the calibration gives
(codes over the central 98 %, the share clipped).  No torch here: the float activations come in.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

import numpy as np

from .. import dtypes

__all__ = ["float_counterparts", "as_ir", "layer_errors", "traced_errors", "calibration_stats", "LAYER_SAMPLES", "LAYER_BYTES",
           "CALIBRATION_SAMPLES", "CENTRAL", "MAX_VALUES"]

#: At most this many test samples enter the per-layer figures of an SCons build (the float stage keeps
#: their float activations, the run stage compares them); ``tabula analyze`` and the Python API take
#: what they are given.
LAYER_SAMPLES = 64
#: ... and at most this many bytes of float activations are kept for them (fewer samples beyond).
LAYER_BYTES = 64 << 20
#: At most this many calibration samples enter the grid statistics (``calibration.json``).
CALIBRATION_SAMPLES = 64
#: The central share of a tensor's calibration values whose span, in codes of its grid, the report gives.
CENTRAL = 0.98
#: At most this many values per tensor are kept for the percentiles (a regular subsample beyond).
MAX_VALUES = 2_000_000

_REQUANT = re.compile(r"^(.+)_requant(?:_\d+)?$")
_VIEW1D = re.compile(r"^(.+)_nhwc_view(?:_\d+)?$")


def _nhwc(shape) -> tuple[int, ...]:
    s = tuple(int(d) for d in shape)
    return (s[0], s[2], s[3], s[1]) if len(s) == 4 else s


def float_counterparts(graph, float_shapes: dict[str, tuple]) -> dict[str, tuple[str, bool]]:
    """IR tensor -> ``(float node name, transpose)`` for every activation tensor of ``graph`` with a float
    counterpart among ``float_shapes`` (node name -> the shape of its value, PyTorch layout); ``transpose``
    says the float value is NCHW and the tensor NHWC, or ``[N, C, L]`` and the tensor its view ``[N, 1, L, C]``
    (see the module docstring for the rule; :func:`as_ir` converts)."""
    out: dict[str, tuple[str, bool]] = {}
    for name, t in graph.tensors.items():
        if t.const or t.dtype not in ("int8", "int16") or t.scale is None or isinstance(t.scale, list):
            continue
        node = name if name in float_shapes else None
        if node is None:
            m = _REQUANT.match(name)
            if m and m.group(1) in float_shapes:
                node = m.group(1)
        if node is None:
            m = _VIEW1D.match(name)
            if m and m.group(1) in float_shapes and len(float_shapes[m.group(1)]) == 3:
                n, c, length = (int(d) for d in float_shapes[m.group(1)])
                if tuple(t.shape) == (n, 1, length, c):
                    out[name] = (m.group(1), True)
            continue
        fshape = tuple(int(d) for d in float_shapes[node])
        if len(fshape) == 4:  # every 4-D activation is NHWC in the IR (also where C == H == W)
            if _nhwc(fshape) == tuple(t.shape):
                out[name] = (node, True)
        elif fshape == tuple(t.shape):
            out[name] = (node, False)
    return out


def _dequant(t, q: np.ndarray) -> np.ndarray:
    return (np.asarray(q, np.float64) - float(t.zero_point)) * float(t.scale)


def as_ir(value: np.ndarray, transpose: bool) -> np.ndarray:
    """A float node's value (PyTorch layout) in its matched IR tensor's layout (float64): as it is, or with
    ``transpose`` (:func:`float_counterparts`) NCHW -> NHWC, or a 3-D ``[N, C, L]`` -> its view ``[N, 1, L, C]``."""
    v = np.asarray(value, np.float64)
    if not transpose:
        return v
    if v.ndim == 3:
        n, c, length = v.shape
        return v.transpose(0, 2, 1).reshape(n, 1, length, c)
    return v.transpose(0, 2, 3, 1)


class _Error:
    """Running sums of one tensor's error over the samples."""

    def __init__(self):
        self.signal = self.noise = self.abs_err = 0.0
        self.max_abs = self.max_lsb = 0.0
        self.n = self.samples = self.outside = 0
        self.lo, self.hi = math.inf, -math.inf
        self.grid: tuple[float, float] | None = None

    def add(self, f: np.ndarray, d: np.ndarray, scale: float, grid: tuple[float, float] | None = None) -> None:
        """One sample: ``f`` the float values, ``d`` the dequantized ones; ``grid`` the real range the tensor's grid
        holds, to count the float values more than one LSB outside it (they saturate)."""
        if f.size:
            self.lo, self.hi = min(self.lo, float(f.min())), max(self.hi, float(f.max()))
            if grid is not None:
                self.grid = grid
                self.outside += int(((f < grid[0] - scale) | (f > grid[1] + scale)).sum())
        e = d - f
        self.signal += float((f * f).sum())
        self.noise += float((e * e).sum())
        a = np.abs(e)
        self.abs_err += float(a.sum())
        if a.size:
            self.max_abs = max(self.max_abs, float(a.max()))
            self.max_lsb = max(self.max_lsb, float(a.max()) / scale)
        self.n += int(f.size)
        self.samples += 1

    def figures(self) -> dict:
        if self.noise == 0.0:
            sqnr = None if self.signal == 0.0 else float("inf")
        elif self.signal == 0.0:
            sqnr = None
        else:
            sqnr = round(10.0 * np.log10(self.signal / self.noise), 2)
        return {"sqnr_db": sqnr, "max_abs_error": self.max_abs, "max_error_lsb": round(self.max_lsb, 3),
                "mean_abs_error": self.abs_err / self.n if self.n else None,
                "rms": float(np.sqrt(self.signal / self.n)) if self.n else None,
                "noise_power": self.noise / self.n if self.n else None, "n_samples": self.samples,
                "clipped": round(self.outside / self.n, 5) if self.n and self.grid else None, "grid": self.grid,
                "min": self.lo if self.n else None, "max": self.hi if self.n else None}


def grid_range(t) -> tuple[float, float] | None:
    """The real range ``[lo, hi]`` an activation tensor's grid holds (its qrange, else its dtype's range);
    None for a tensor without one per-tensor scale (an index or mask output, per-channel)."""
    scale = getattr(t, "scale", None)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or t.zero_point is None:
        return None
    try:
        qlo, qhi = t.qrange or dtypes.range_of(t.dtype)
    except (KeyError, ValueError, TypeError):
        return None
    s, zp = float(scale), int(t.zero_point)
    return (qlo - zp) * s, (qhi - zp) * s


def layer_errors(graph, matches: dict[str, tuple[str, bool]],
                 samples: Iterable[tuple[list[np.ndarray], dict[str, np.ndarray]]]) -> dict[str, dict]:
    """Per matched tensor (``matches``: :func:`float_counterparts`) its error over ``samples``, each
    ``(int_inputs, float_values)``: the program's integer inputs (device layout, as
    :meth:`tabula.Program.quantize_inputs` gives them) and the float model's node values for the same
    sample (node name -> array, PyTorch layout).  Per tensor: ``float_node``, ``sqnr_db`` (of the
    dequantized reference values against the float node's over every sample: ``10 log10(sum f^2 /
    sum (f - dq)^2)``; ``inf`` when identical, None without signal), ``max_abs_error``,
    ``max_error_lsb`` (in the tensor's own LSB), ``mean_abs_error``, ``rms`` (of the float values),
    ``noise_power`` (mean squared error), ``n_samples``."""
    from ..reference.interpreter import run_graph

    acc = {name: _Error() for name in matches}
    for int_inputs, values in samples:
        trace: dict[str, np.ndarray] = {}
        run_graph(graph, int_inputs, trace=trace)
        for name, (node, transpose) in matches.items():
            if name not in trace or node not in values:
                continue
            t = graph.tensors[name]
            acc[name].add(as_ir(values[node], transpose), _dequant(t, trace[name]), float(t.scale), grid_range(t))
    return {name: {"float_node": matches[name][0], **a.figures()} for name, a in acc.items() if a.samples}


def traced_errors(graph, floats: dict[str, np.ndarray], traces: list[dict[str, np.ndarray]],
                  nodes: dict[str, str] | None = None) -> dict[str, dict]:
    """:func:`layer_errors` from values already computed: ``floats`` (IR tensor -> the float values of its
    node over the samples, ``[n, *the tensor's shape]``: sample i at ``[i]``, already in the tensor's layout) and ``traces`` (the reference's
    every intermediate, one dict per sample: :func:`tabula.reference.interpreter.run_graph` ``trace``) --
    what the run stage does with the float stage's ``float_layers.npz`` and its own reference run.
    ``nodes``: tensor -> float node name, for the ``float_node`` figure."""
    acc: dict[str, _Error] = {}
    for name, f in floats.items():
        t = graph.tensors.get(name)
        if t is None:
            continue
        a = acc.setdefault(name, _Error())
        for i, tr in enumerate(traces[: len(f)]):
            if name in tr:
                d = _dequant(t, tr[name])
                if f[i].size == d.size:  # the same values in the tensor's layout (a stale file: skipped)
                    a.add(np.asarray(f[i], np.float64).reshape(d.shape), d, float(t.scale), grid_range(t))
    return {name: {"float_node": (nodes or {}).get(name, name), **a.figures()} for name, a in acc.items() if a.samples}


def _subsample(v: np.ndarray, keep: int) -> np.ndarray:
    if v.size <= keep:
        return v
    return v[:: int(np.ceil(v.size / keep))]


def calibration_stats(graph, matches: dict[str, tuple[str, bool]], values: Iterator[dict[str, np.ndarray]],
                      central: float = CENTRAL) -> dict[str, dict]:
    """Per matched tensor, its grid against the float values the calibration samples give it
    (``values``: one dict node -> array per sample): ``float_node``, ``min`` / ``max`` of the values,
    ``lo`` / ``hi`` (the ``central`` share's ends, percentiles 1 and 99 for 98 %), ``codes_central``
    (that span in codes of the tensor's grid: ``(hi - lo) / scale``), ``grid_min`` / ``grid_max`` (the
    real range the grid holds: its qrange or dtype range), ``clipped`` (the share of values more than
    one LSB outside it: saturated, not merely rounded to the end code), ``n_values``."""
    kept: dict[str, list[np.ndarray]] = {name: [] for name in matches}
    per_sample = max(1, MAX_VALUES // 64)
    for v in values:
        for name, (node, _) in matches.items():
            if node in v:
                kept[name].append(_subsample(np.asarray(v[node], np.float64).reshape(-1), per_sample))
    out = {}
    tail = (1.0 - central) / 2.0 * 100.0
    for name, parts in kept.items():
        if not parts:
            continue
        x = _subsample(np.concatenate(parts), MAX_VALUES)
        t = graph.tensors[name]
        s, zp = float(t.scale), int(t.zero_point)
        qlo, qhi = t.qrange or dtypes.range_of(t.dtype)
        glo, ghi = (qlo - zp) * s, (qhi - zp) * s
        lo, hi = (float(p) for p in np.percentile(x, [tail, 100.0 - tail]))
        clipped = float(((x < glo - s) | (x > ghi + s)).mean()) if x.size else 0.0
        out[name] = {"float_node": matches[name][0], "min": float(x.min()), "max": float(x.max()), "lo": lo, "hi": hi,
                     "codes_central": round((hi - lo) / s, 2), "grid_min": glo, "grid_max": ghi,
                     "clipped": round(clipped, 5), "n_values": int(x.size), "central": central}
    return out
