"""Models from files people have, as ``torch.export`` programs for tabula's chain.

* ``.pt2``    -- a ``torch.export`` program (``torch.export.save``), loaded as it is;
* ``.tflite`` -- a float TFLite model, turned into an ``nn.Module`` by tabula's own reader
  (:mod:`tabula.importers.tflite`);
* ``.onnx``   -- an ONNX model, turned into an ``nn.Module`` by onnx2torch (:mod:`tabula.importers.onnx`,
  the ``[onnx]`` extra).

:func:`load_program` gives all three as an ``ExportedProgram`` exported with batch-1 example inputs
(4-D inputs NCHW), which is what :func:`tabula.quantize` and the SCons / CLI stages take.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["SUFFIXES", "load_module", "load_program"]

#: File suffixes :func:`load_program` reads.
SUFFIXES = (".pt2", ".tflite", ".onnx")


def load_module(path: str | Path):
    """``(module, example_inputs)`` of a ``.tflite`` or ``.onnx`` file: the float ``nn.Module`` in eval mode
    and one batch-1 zero tensor per input (PyTorch layout: 4-D NCHW).

    Raises:
        ValueError: another suffix; and what :func:`tabula.importers.tflite.load_tflite` /
            :func:`tabula.importers.onnx.load_onnx` raise.
    """
    import torch

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".tflite":
        from .tflite import load_tflite

        module = load_tflite(p)
        shapes = module.input_shapes
    elif suffix == ".onnx":
        from .onnx import load_onnx

        module, shapes = load_onnx(p)
    else:
        raise ValueError(f"{p}: load_module reads .tflite and .onnx files, not {suffix or 'a file without a suffix'}")
    example = tuple(torch.zeros((1, *s[1:]) if s else ()) for s in shapes)
    return module, example


def load_program(path: str | Path):
    """The model at ``path`` (``.pt2``, ``.tflite`` or ``.onnx``) as a ``torch.export.ExportedProgram`` with
    batch-1 example inputs (``.example_inputs``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: an unknown suffix, a file that is not what its suffix says (one line naming it), or
            a model the importer does not convert (:class:`tabula.importers.tflite.TFLiteImportError`,
            :class:`tabula.importers.onnx.ONNXImportError`).
        ImportError: the reader / converter for that format is not installed (the line says which extra).
    """
    import torch

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file {p} not found")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{p}: unknown model format {suffix or '(no suffix)'}; give a .pt2 (torch.export.save), "
                         "a float .tflite or an .onnx file")
    if suffix == ".pt2":
        return torch.export.load(str(p))
    module, example = load_module(p)
    try:
        with torch.no_grad():
            return torch.export.export(module, example)
    except Exception as e:  # torch.export's own errors: data-dependent control flow in a converted op
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{p.name}: torch.export cannot capture the converted model ({type(e).__name__}: {first}); "
                         + ("export the ONNX model with opset_version=17 (torch.onnx.export(..., dynamo=False))"
                            if suffix == ".onnx" else "report the model: the TFLite importer should give exportable "
                            "modules")) from None
