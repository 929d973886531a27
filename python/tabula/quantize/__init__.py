"""Quantize a model with torchao's PT2E flow and tabula's rules (see :mod:`.rules`)."""
from __future__ import annotations

from typing import Iterable

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.fx import GraphModule

__all__ = ["quantize", "capture", "SCHEMES", "TabulaQuantizer", "UnsupportedOpError", "check_supported"]

_LAZY = {"SCHEMES", "TabulaQuantizer", "UnsupportedOpError", "check_supported"}


def __getattr__(name: str):
    # torchao is imported on first use only, so ``import tabula`` stays light.
    if name in _LAZY:
        from . import quantizer

        return getattr(quantizer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def capture(model, example_inputs: tuple) -> "GraphModule":
    """Capture ``model`` as an FX graph for PT2E.

    ``model`` may be an ``nn.Module`` (exported here with ``torch.export.export``), a
    ``torch.export.ExportedProgram`` (e.g. loaded from a ``.pt2``) or an already captured
    ``GraphModule``.  Uses ``.module(check_guards=False)`` so no ``_guards_fn`` node reaches prepare.
    """
    import torch
    from torch.fx import GraphModule

    if isinstance(model, GraphModule):
        return model
    if isinstance(model, torch.export.ExportedProgram):
        return model.module(check_guards=False)
    if isinstance(model, torch.nn.Module):
        model = model.eval()
        return torch.export.export(model, tuple(example_inputs)).module(check_guards=False)
    raise TypeError(f"cannot quantize a {type(model).__name__}: pass an nn.Module, ExportedProgram or GraphModule")


def _batches(calibration) -> Iterable[tuple]:
    import torch

    if isinstance(calibration, torch.Tensor):
        for i in range(calibration.shape[0]):
            yield (calibration[i : i + 1],)
        return
    for item in calibration:
        yield tuple(item) if isinstance(item, (tuple, list)) else (item,)


def quantize(model, example_inputs: tuple, calibration, scheme: str = "int8", table_output: str | None = None) -> "GraphModule":
    """Quantize ``model`` with PT2E (prepare, calibrate, convert) under tabula's rules.

    Args:
        model: ``nn.Module``, ``ExportedProgram`` or captured ``GraphModule`` (float32, NCHW images).
        example_inputs: tuple of example float tensors (shapes fix the graph; batch 1 typical).
        calibration: a float tensor ``[n, ...]`` run one sample at a time with the example's batch
            size 1, or an iterable of input tuples.
        scheme: ``"int8"`` or ``"a16w8"`` (int16 activations, int8 weights).
        table_output: how table ops' own output qparams are chosen: ``"exact"`` (default; from the
            image of every input code) or ``"observed"`` (calibrated).
    Returns:
        The converted PT2E ``GraphModule`` with ``quantize_per_tensor``/``dequantize_*`` nodes.
    Raises:
        UnsupportedOpError: listing every unsupported op, before any calibration runs.
        ValueError: NaN/Inf in the weights, or an unknown scheme.
    """
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from .quantizer import TabulaQuantizer, check_supported

    import torch

    gm = capture(model, example_inputs)
    check_supported(gm)
    for name, p in list(gm.named_parameters()) + list(gm.named_buffers()):
        if p.is_floating_point() and not torch.isfinite(p).all():
            raise ValueError(f"weight {name!r} contains NaN or Inf; fix the model before quantizing")
    prepared = prepare_pt2e(gm, TabulaQuantizer(scheme, table_output))
    move_exported_model_to_eval(prepared)
    with torch.no_grad():
        for args in _batches(calibration):
            prepared(*args)
    converted = convert_pt2e(prepared)
    move_exported_model_to_eval(converted)
    return converted
