"""Quantize a model with torchao's PT2E flow under tabula's rules (:mod:`tabula.rules`): capture, annotate, calibrate, convert."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.fx import GraphModule

__all__ = ["quantize", "capture", "passes", "float_graph", "quantize_graph", "SCHEMES", "SCHEME_NAMES", "TabulaQuantizer", "check_supported"]

from .schemes import SCHEME_NAMES  # noqa: E402  (no torch: SConstruct checks scheme= with it)
# the PT2E flow step by step (torch imported on first use); tabula.quantizer.mixed reads it there
from .flow import _batches, capture, float_graph, passes, quantize_graph  # noqa: E402,F401

_LAZY = {"SCHEMES", "TabulaQuantizer", "check_supported"}


def __getattr__(name: str):
    # torchao is imported on first use only, so ``import tabula`` stays light.
    if name in _LAZY:
        from . import annotator

        return getattr(annotator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def quantize(model, example_inputs: tuple, calibration, scheme: str = "int8", table_output: str | None = None,
             observer: str = "auto", precision: dict | None = None, target_sqnr: float | None = None,
             budget: float | None = None, board: str | None = None, report=None) -> "GraphModule":
    """Quantize ``model`` with PT2E (prepare, calibrate, convert) under tabula's rules.

    Args:
        model: ``nn.Module``, ``ExportedProgram`` or captured ``GraphModule`` (float32, NCHW images).
        example_inputs: tuple of example float tensors (shapes fix the graph; batch 1 typical).
        calibration: a float tensor or numpy array ``[n, ...]`` run one sample at a time with the
            example's batch size 1, or an iterable of input tuples.
        scheme: ``"int8"``, ``"a16w8"`` (int16 activations, int8 weights) or ``"mixed"`` (int8 or int16
            activations per layer, :mod:`tabula.quantizer.mixed`: the fewest, cheapest int16 layers that
            meet ``target_sqnr`` or fit ``budget``, measured on ``calibration``).
        table_output: how table ops' own output qparams are chosen: ``"exact"`` (default; from the
            image of every input code) or ``"observed"`` (calibrated).
        observer: how calibrated activation grids are chosen: ``"auto"`` (default; the observed
            min/max when ``calibration`` has fewer than 100 inputs, else HistogramObserver's
            L2-optimal grid), ``"minmax"`` or ``"histogram"``
            (:data:`tabula.quantizer.annotator.OBSERVERS`).
        precision: per-layer overrides, ``{"classifier": "a16w8", "features.0": "int8"}`` (module paths
            or layer node names -> ``"int8"`` / ``"a16w8"``; :func:`tabula.quantizer.precision.resolve_overrides`).
            With ``scheme="mixed"`` the search keeps them; with ``"int8"`` / ``"a16w8"`` they override
            that scheme's layers.
        target_sqnr: ``scheme="mixed"``: the output SQNR (dB vs the float model, on the calibration
            data) to reach; ``budget``: the instruction budget per inference (cost model of ``board``,
            default Cortex-M55 Helium) to stay within.  Neither: the default target of
            :func:`tabula.quantizer.mixed.choose`.
        report: ``scheme="mixed"``: a callable given the :class:`tabula.quantizer.mixed.Choice` (its
            per-layer table); the choice is also in the returned graph's ``meta["tabula_precision"]``.
    Returns:
        The converted PT2E ``GraphModule`` with ``quantize_per_tensor``/``dequantize_*`` nodes.
        Identity-like ops are gone and constant-only subgraphs are folded into constants
        (:func:`passes`, run before anything else).
    Raises:
        UnsupportedOpError: listing every unsupported op, before any calibration runs.
        ValueError: NaN/Inf in the weights, an unknown scheme, or a ``precision`` key that names no layer.
        QuantizationError (a ValueError): calibration that is complex, holds NaN/Inf, is one
            constant value (every range would collapse), has another shape per sample than the
            example inputs (naming the expected one), or whose grids the integer program cannot hold
            (:func:`tabula.quantizer.grids.check_grids`: beyond float32, or a rescale no 32-bit
            multiplier holds; naming each calibration input's range).
    """
    from .annotator import SCHEMES, TabulaQuantizer
    from .schemes import MIXED

    if scheme not in SCHEMES and scheme != MIXED:
        raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEME_NAMES)}")
    if scheme != MIXED and (target_sqnr is not None or budget is not None):
        raise ValueError("target_sqnr and budget choose the precision per layer: give them with scheme='mixed'")
    if scheme == MIXED:
        from .mixed import quantize_mixed

        return quantize_mixed(model, example_inputs, calibration, table_output=table_output, observer=observer,
                              precision=precision, target_sqnr=target_sqnr, budget=budget, board=board, report=report)
    gm = float_graph(model, example_inputs, scheme)
    choice = None
    if precision:
        from .precision import layers, resolve_overrides

        choice = resolve_overrides(layers(gm), precision)
    return quantize_graph(gm, TabulaQuantizer(scheme, table_output, observer=observer, precision=choice),
                          example_inputs, calibration)
