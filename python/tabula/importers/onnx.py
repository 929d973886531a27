"""An ONNX model (``.onnx``) as a PyTorch module, through onnx2torch (the ``[onnx]`` extra).

:func:`load_onnx` checks the file with ``onnx``, converts it with ``onnx2torch.convert`` (a ``GraphModule``
of ``nn.Conv2d`` / ``nn.Linear`` / ... modules), and returns it with the inputs' shapes (a symbolic batch
dim becomes 1: the device runs one sample per inference); a Reshape's ``allowzero=1`` that changes nothing
(a constant shape without 0) is dropped first, as onnx2torch refuses it, and a Reshape to a constant shape
becomes ``torch.reshape`` with that shape (onnx2torch's own tests the shape tensor, which ``torch.export``
cannot trace).  ONNX tensors are in PyTorch's layout already
(NCHW).  ``x * sigmoid(x)`` -- how ONNX spells SiLU below opset 22 -- is turned back into one ``silu`` by
the quantizer (:mod:`tabula.quantizer.fuse_silu_pass`), so a model exported to ONNX quantizes as it does
from PyTorch.

onnx2torch converts operator versions up to opset 17 (a few to 21); a model from a newer exporter
(``torch.onnx.export(..., dynamo=True)`` writes opset 18) whose operators it does not know is converted
to opset 17 with ``onnx.version_converter`` and tried again.  onnx2torch imports ``torchvision`` for its
NMS and RoiAlign converters only; where torchvision does not import (not installed, or a build for
another torch), those two are stubbed for the duration of the import and raise if a model uses them.
"""
from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

from ..errors import TabulaError

__all__ = ["ONNXImportError", "load_onnx", "TARGET_OPSET"]

#: The opset a model is converted to when onnx2torch lacks a converter for one of its operator versions.
TARGET_OPSET = 17

_INSTALL = "pip install -e '.[onnx]' && pip install --no-deps 'onnx2torch>=1.5.15,<2' (bootstrap.sh does both)"


class ONNXImportError(TabulaError, ValueError):
    """The ``.onnx`` file cannot be read or converted (named, with the fix)."""


def _onnx2torch():
    """``onnx2torch``, imported with a stand-in for ``torchvision.ops`` when torchvision does not import."""
    if "onnx2torch" in sys.modules:
        return sys.modules["onnx2torch"]
    try:
        importlib.import_module("torchvision")
        stubbed = False
    except Exception:  # absent (ModuleNotFoundError) or a build for another torch (RuntimeError)
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]

        def unavailable(*args, **kwargs):
            raise ONNXImportError("this ONNX model uses NonMaxSuppression / RoiAlign, which onnx2torch runs with "
                                  "torchvision (not importable here); tabula does not lower them either")

        ops = types.ModuleType("torchvision.ops")
        ops.roi_align = ops.nms = ops.box_convert = ops.batched_nms = unavailable
        tv = types.ModuleType("torchvision")
        tv.ops = ops
        sys.modules["torchvision"], sys.modules["torchvision.ops"] = tv, ops
        stubbed = True
    try:
        return importlib.import_module("onnx2torch")
    except ImportError as e:
        raise ImportError(f"reading .onnx files needs onnx2torch ({e}): {_INSTALL}") from None
    finally:
        if stubbed:  # only onnx2torch's modules keep the stand-in
            sys.modules.pop("torchvision.ops", None)
            sys.modules.pop("torchvision", None)


def _input_shapes(model, name: str) -> list[tuple[int, ...]]:
    """The graph inputs (initializers excluded) as static shapes; a symbolic first dim becomes 1."""
    inits = {t.name for t in model.graph.initializer}
    shapes = []
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        t = inp.type.tensor_type
        if inp.type.WhichOneof("value") != "tensor_type" or t.elem_type != 1:  # 1: FLOAT
            raise ONNXImportError(f"{name}: input {inp.name!r} is not a float32 tensor; tabula takes float models "
                                  "(quantize a float ONNX export, not a quantized one)")
        dims = []
        for k, d in enumerate(t.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif k == 0:
                dims.append(1)
            else:
                raise ONNXImportError(f"{name}: input {inp.name!r} has a symbolic dim {k} ({d.dim_param!r}); tabula "
                                      "compiles fixed shapes: export with a fixed input shape (no dynamic_axes "
                                      "but the batch)")
        shapes.append(tuple(dims))
    return shapes


def _drop_needless_allowzero(model) -> None:
    """Reshape's ``allowzero=1`` (``torch.onnx.export(dynamo=True)`` writes it) differs from the default
    only for a 0 in the target shape; onnx2torch refuses the attribute, so it is dropped where the shape
    is a constant without a 0 (the same model)."""
    from onnx import numpy_helper

    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    for n in model.graph.node:
        if n.op_type != "Reshape" or len(n.input) < 2 or n.input[1] not in consts:
            continue
        keep = [a for a in n.attribute if not (a.name == "allowzero" and a.i == 1)]
        if len(keep) != len(n.attribute) and (consts[n.input[1]] != 0).all():
            del n.attribute[:]
            n.attribute.extend(keep)


def _static_reshapes(gm) -> None:
    """onnx2torch's ``OnnxReshape`` takes the target shape as a tensor and tests it for zeros, which
    ``torch.export`` cannot trace (a data-dependent branch); where the shape is a constant without 0 the
    node becomes ``torch.reshape(x, shape)`` -- the same op with the shape as Python ints."""
    import torch

    from ..fx import replace_with_call

    changed = False
    for n in list(gm.graph.nodes):
        if n.op != "call_module" or type(gm.get_submodule(n.target)).__name__ != "OnnxReshape" or len(n.args) != 2:
            continue
        shape_node = n.args[1]
        if getattr(shape_node, "op", None) != "get_attr":
            continue
        obj = gm
        for part in str(shape_node.target).split("."):
            obj = getattr(obj, part)
        shape = [int(v) for v in obj.reshape(-1).tolist()]
        if 0 in shape:
            continue
        replace_with_call(gm.graph, n, torch.reshape, (n.args[0], tuple(shape)))
        changed = True
    if changed:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()


def load_onnx(path: str | Path):
    """``(module, input_shapes)`` of the ONNX model at ``path``: the onnx2torch ``GraphModule`` in eval
    mode, and each input's shape (PyTorch layout, batch 1 when the file leaves it symbolic).

    Raises:
        FileNotFoundError: no such file.
        ImportError: onnx / onnx2torch are missing (the message gives the install command).
        ONNXImportError: not a readable ONNX model, an invalid one (the checker's first line), a
            non-float or dynamically shaped input, or an operator onnx2torch does not convert (its
            name and version, also after converting to opset :data:`TARGET_OPSET`).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file {p} not found")
    try:
        import onnx
    except ImportError as e:
        raise ImportError(f"reading .onnx files needs the onnx package ({e}): {_INSTALL}") from None
    try:
        model = onnx.load(str(p))
    except Exception as e:  # protobuf's DecodeError, a truncated file
        raise ONNXImportError(f"{p.name} is not a readable ONNX model ({type(e).__name__}: {e}); export it again "
                              "with torch.onnx.export") from None
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ONNXImportError(f"{p.name} is not a valid ONNX model: {first}") from None
    shapes = _input_shapes(model, p.name)
    _drop_needless_allowzero(model)
    o2t = _onnx2torch()
    try:
        module = o2t.convert(model)
    except NotImplementedError as first:
        try:
            from onnx import version_converter

            older = version_converter.convert_version(model, TARGET_OPSET)
            module = o2t.convert(older)
        except NotImplementedError as e:
            raise ONNXImportError(f"{p.name}: onnx2torch cannot convert it ({e}); rewrite that operator or export "
                                  f"with opset_version={TARGET_OPSET}") from None
        except Exception:
            raise ONNXImportError(f"{p.name}: onnx2torch cannot convert it ({first}), nor the model converted to "
                                  f"opset {TARGET_OPSET}; export with opset_version={TARGET_OPSET}") from None
    except Exception as e:
        raise ONNXImportError(f"{p.name}: onnx2torch failed ({type(e).__name__}: {e})") from None
    _static_reshapes(module)
    return module.eval(), shapes
