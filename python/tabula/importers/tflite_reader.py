"""Read a TFLite flatbuffer into plain Python: its operators in execution order, their options and
their constant tensors as float32 numpy arrays (the weights a PyTorch port loads).

Reads with the ``tflite`` PyPI package (``pip install -e '.[mlperf]'``), the flatbuffer schema's
generated accessors; no TensorFlow.  Every operator is listed (``type``, tensors) with its builtin
options decoded (:class:`TFLiteOp`); :mod:`tabula.importers.tflite` turns the graph into an ``nn.Module``.

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

__all__ = ["TFLiteTensor", "TFLiteOp", "TFLiteGraph", "read_tflite", "read_tflite_graph"]

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
    ``"RELU"``, ...), ``depth_multiplier``, ``filter`` (h, w) for pools, ``beta`` for softmax, ``axis``,
    ``alpha``, ``keep_dims``, ``keep_num_dims``, ``new_shape``, ``squeeze_dims``, ``align_corners``,
    ``half_pixel_centers``, ``adj_x`` / ``adj_y``, the strided-slice masks, ``approximate``), input and
    output tensors (a missing optional input, e.g. no bias, is ``None``)."""

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


#: Option accessors decoded (TFLite schema name -> key in :attr:`TFLiteOp.options`); pairs (H, W) are joined.
_SCALAR_OPTIONS = {
    "Padding": "padding", "DepthMultiplier": "depth_multiplier", "Beta": "beta", "Axis": "axis", "Alpha": "alpha",
    "KeepDims": "keep_dims", "KeepNumDims": "keep_num_dims", "AlignCorners": "align_corners",
    "HalfPixelCenters": "half_pixel_centers", "AdjX": "adj_x", "AdjY": "adj_y", "BeginMask": "begin_mask",
    "EndMask": "end_mask", "EllipsisMask": "ellipsis_mask", "NewAxisMask": "new_axis_mask",
    "ShrinkAxisMask": "shrink_axis_mask", "Offset": "offset", "Approximate": "approximate",
    "WeightsFormat": "weights_format", "NumSplits": "num_splits",
}
_PAIR_OPTIONS = {"stride": ("StrideH", "StrideW"), "dilation": ("DilationHFactor", "DilationWFactor"),
                 "filter": ("FilterHeight", "FilterWidth")}
_ARRAY_OPTIONS = {"NewShape": "new_shape", "SqueezeDims": "squeeze_dims"}


def _options(op, option_types: dict[int, str]) -> dict:
    """The operator's builtin options as plain values (see :class:`TFLiteOp`); ``{}`` when it has none."""
    import tflite

    kind = option_types.get(op.BuiltinOptionsType(), "NONE")
    if kind == "NONE" or op.BuiltinOptions() is None or not hasattr(tflite, kind):
        return {}
    o = getattr(tflite, kind)()
    tab = op.BuiltinOptions()
    o.Init(tab.Bytes, tab.Pos)
    d: dict = {}
    if hasattr(o, "FusedActivationFunction"):
        d["activation"] = _ACTIVATION.get(o.FusedActivationFunction(), str(o.FusedActivationFunction()))
    for key, (h, w) in _PAIR_OPTIONS.items():
        if hasattr(o, h):
            d[key] = (int(getattr(o, h)()), int(getattr(o, w)()))
    for acc, key in _SCALAR_OPTIONS.items():
        if hasattr(o, acc):
            v = getattr(o, acc)()
            d[key] = _PADDING.get(v, v) if key == "padding" else (float(v) if isinstance(v, float) else v)
    for acc, key in _ARRAY_OPTIONS.items():
        if hasattr(o, acc + "Length") and not getattr(o, acc + "IsNone")():
            d[key] = [int(v) for v in getattr(o, acc + "AsNumpy")()]
    return d


@dataclass
class TFLiteGraph:
    """Subgraph 0 of a ``.tflite`` file: its operators in execution order, and its input and output
    tensors (the model's signature order)."""

    ops: list[TFLiteOp]
    inputs: list[TFLiteTensor]
    outputs: list[TFLiteTensor]


def read_tflite(path: str | Path) -> list[TFLiteOp]:
    """The operators of subgraph 0 of the ``.tflite`` file ``path``, in execution order
    (:func:`read_tflite_graph`'s ``ops``)."""
    return read_tflite_graph(path).ops


def read_tflite_graph(path: str | Path) -> TFLiteGraph:
    """Subgraph 0 of the ``.tflite`` file ``path``: operators in execution order, graph inputs and outputs.

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
    try:
        model = tflite.Model.GetRootAsModel(raw, 0)
        n_graphs = model.SubgraphsLength()
    except Exception as e:  # a damaged flatbuffer: offsets past the end
        raise ValueError(f"{p} is a damaged TFLite flatbuffer ({type(e).__name__}: {e})") from None
    if n_graphs != 1:
        raise ValueError(f"{p} has {n_graphs} subgraphs; only single-graph models are read")
    sg = model.Subgraphs(0)
    ops_by_code = _names(tflite.BuiltinOperator)
    types = _names(tflite.TensorType)
    option_types = _names(tflite.BuiltinOptions)
    tensors: dict[int, TFLiteTensor] = {}

    def get(i: int) -> TFLiteTensor | None:
        if i < 0:
            return None
        if i not in tensors:
            tensors[i] = _tensor(model, sg, i, raw, types)
        return tensors[i]

    ops = []
    try:
        for k in range(sg.OperatorsLength()):
            op = sg.Operators(k)
            code = model.OperatorCodes(op.OpcodeIndex())
            # builtin codes >= 127 live in BuiltinCode(); older files only fill the deprecated byte
            type_name = ops_by_code.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "CUSTOM")
            ops.append(TFLiteOp(k, type_name, _options(op, option_types),
                                [get(int(i)) for i in op.InputsAsNumpy()], [get(int(i)) for i in op.OutputsAsNumpy()]))
        inputs = [get(int(i)) for i in sg.InputsAsNumpy()]
        outputs = [get(int(i)) for i in sg.OutputsAsNumpy()]
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"{p} is a damaged TFLite flatbuffer ({type(e).__name__}: {e})") from None
    return TFLiteGraph(ops, inputs, outputs)
