"""Read a TFLite flatbuffer into plain Python: its operators in execution order, their options and
their constant tensors as float32 numpy arrays (the weights a PyTorch port loads).

Reads with the ``tflite`` PyPI package (``pip install -e '.[mlperf]'``), the flatbuffer schema's
generated accessors; no TensorFlow.  Only what the MLPerf Tiny reference models use is decoded
(CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, AVERAGE_POOL_2D, RESHAPE, SOFTMAX); any other
operator is still listed (``type``, tensors) with empty ``options``.

Constants stored quantized (int8/int16/int32 with a scale, e.g. the five CONV_2D weights of the
"hybrid" ``kws_ref_model_float32.tflite``) are returned dequantized, ``(q - zero_point) * scale``,
per tensor or per channel along the tensor's ``quantized_dimension``.  Layouts are TFLite's:
CONV_2D weights ``[O, H, W, I]``, DEPTHWISE_CONV_2D ``[1, H, W, C*M]``, FULLY_CONNECTED ``[O, I]``,
activations NHWC.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["TFLiteTensor", "TFLiteOp", "read_tflite"]

_NP_DTYPE = {"FLOAT32": np.float32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32,
             "INT64": np.int64, "FLOAT16": np.float16}
_PADDING = {0: "SAME", 1: "VALID"}
_ACTIVATION = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass
class TFLiteTensor:
    """One tensor of the graph.

    ``data`` is the constant's value as float32 (dequantized when stored quantized) or ``None`` for
    an activation; ``scale``/``zero_point`` are the stored quantization (empty when none)."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    data: np.ndarray | None
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    zero_point: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


@dataclass
class TFLiteOp:
    """One operator: ``type`` (TFLite builtin name, e.g. ``"CONV_2D"``), ``options`` (decoded: padding
    ``"SAME"``/``"VALID"``, ``stride`` (h, w), ``dilation`` (h, w), ``activation`` (``"NONE"``,
    ``"RELU"``, ...), ``depth_multiplier``, ``filter`` (h, w) for pools, ``beta`` for softmax),
    input and output tensors (a missing optional input, e.g. no bias, is ``None``)."""

    index: int
    type: str
    options: dict
    inputs: list[TFLiteTensor | None]
    outputs: list[TFLiteTensor]


def _names(enum_cls) -> dict[int, str]:
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith("_")}


def _tensor(model, sg, i: int, raw: bytes, types: dict[int, str]) -> TFLiteTensor:
    t = sg.Tensors(i)
    dtype = types[t.Type()]
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    q = t.Quantization()
    scale = q.ScaleAsNumpy().astype(np.float32) if q is not None and q.ScaleLength() else np.zeros(0, np.float32)
    zp = q.ZeroPointAsNumpy().astype(np.int64) if q is not None and q.ZeroPointLength() else np.zeros(0, np.int64)
    data = None
    buf = model.Buffers(t.Buffer()) if t.Buffer() < model.BuffersLength() else None
    if buf is not None:
        if buf.DataLength():
            blob = buf.DataAsNumpy().tobytes()
        elif buf.Offset() > 1:  # large models keep buffers after the flatbuffer
            blob = raw[buf.Offset() : buf.Offset() + buf.Size()]
        else:
            blob = b""
        if blob:
            if dtype not in _NP_DTYPE:
                raise ValueError(f"tensor {i} ({t.Name().decode()}): constant of type {dtype} is not supported")
            q_or_f = np.frombuffer(blob, dtype=_NP_DTYPE[dtype]).reshape(shape)
            if dtype in ("FLOAT32", "FLOAT16"):
                data = q_or_f.astype(np.float32)
            elif len(scale):  # stored quantized: dequantize along quantized_dimension
                axis = q.QuantizedDimension()
                bshape = [1] * len(shape)
                if len(scale) > 1:
                    bshape[axis] = len(scale)
                zpa = zp if len(zp) else np.zeros(len(scale), np.int64)
                data = ((q_or_f.astype(np.float64) - zpa.reshape(bshape)) * scale.astype(np.float64).reshape(bshape))
                data = data.astype(np.float32)
            else:  # plain integers (shapes, axes)
                data = q_or_f.copy()
    return TFLiteTensor(i, t.Name().decode(), shape, dtype, data, scale, zp)


def _options(op, type_name: str) -> dict:
    import tflite

    kinds = {"CONV_2D": tflite.Conv2DOptions, "DEPTHWISE_CONV_2D": tflite.DepthwiseConv2DOptions,
             "FULLY_CONNECTED": tflite.FullyConnectedOptions, "ADD": tflite.AddOptions,
             "AVERAGE_POOL_2D": tflite.Pool2DOptions, "MAX_POOL_2D": tflite.Pool2DOptions,
             "SOFTMAX": tflite.SoftmaxOptions}
    if type_name not in kinds or op.BuiltinOptions() is None:
        return {}
    o = kinds[type_name]()
    tab = op.BuiltinOptions()
    o.Init(tab.Bytes, tab.Pos)
    d: dict = {}
    if hasattr(o, "FusedActivationFunction"):
        d["activation"] = _ACTIVATION.get(o.FusedActivationFunction(), str(o.FusedActivationFunction()))
    if hasattr(o, "Padding"):
        d["padding"] = _PADDING[o.Padding()]
    if hasattr(o, "StrideH"):
        d["stride"] = (int(o.StrideH()), int(o.StrideW()))
    if hasattr(o, "DilationHFactor"):
        d["dilation"] = (int(o.DilationHFactor()), int(o.DilationWFactor()))
    if hasattr(o, "DepthMultiplier"):
        d["depth_multiplier"] = int(o.DepthMultiplier())
    if hasattr(o, "FilterHeight"):
        d["filter"] = (int(o.FilterHeight()), int(o.FilterWidth()))
    if hasattr(o, "Beta"):
        d["beta"] = float(o.Beta())
    return d


def read_tflite(path: str | Path) -> list[TFLiteOp]:
    """The operators of subgraph 0 of the ``.tflite`` file ``path``, in execution order.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ImportError: the ``tflite`` package is missing (``pip install -e '.[mlperf]'``).
        ValueError: the file is not a TFLite flatbuffer, or has several subgraphs, or a constant of a
            type this reader does not decode.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p} not found")
    try:
        import tflite
    except ImportError as e:
        raise ImportError("reading .tflite files needs the 'tflite' package: pip install -e '.[mlperf]'") from e
    raw = p.read_bytes()
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise ValueError(f"{p} is not a TFLite flatbuffer (no 'TFL3' identifier)")
    model = tflite.Model.GetRootAsModel(raw, 0)
    if model.SubgraphsLength() != 1:
        raise ValueError(f"{p} has {model.SubgraphsLength()} subgraphs; only single-graph models are read")
    sg = model.Subgraphs(0)
    ops_by_code = _names(tflite.BuiltinOperator)
    types = _names(tflite.TensorType)
    tensors: dict[int, TFLiteTensor] = {}

    def get(i: int) -> TFLiteTensor | None:
        if i < 0:
            return None
        if i not in tensors:
            tensors[i] = _tensor(model, sg, i, raw, types)
        return tensors[i]

    ops = []
    for k in range(sg.OperatorsLength()):
        op = sg.Operators(k)
        code = model.OperatorCodes(op.OpcodeIndex())
        # builtin codes >= 127 live in BuiltinCode(); older files only fill the deprecated byte
        type_name = ops_by_code.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "CUSTOM")
        ops.append(TFLiteOp(k, type_name, _options(op, type_name),
                            [get(int(i)) for i in op.InputsAsNumpy()], [get(int(i)) for i in op.OutputsAsNumpy()]))
    return ops
