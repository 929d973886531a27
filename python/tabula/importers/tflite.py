"""A float TFLite model (``.tflite``) as a PyTorch ``nn.Module``, for tabula's chain (``model=x.tflite``).

:func:`load_tflite` reads the file (:mod:`tabula.importers.tflite_reader`) and builds a
:class:`TFLiteModule` whose forward runs the operators in the file's order with PyTorch ops that
tabula's rules cover, so ``torch.export`` of it gives the graph a hand-written port would:

* **Layout**: tabula's convention -- 4-D tensors are NCHW in PyTorch (the device keeps NHWC), so the
  module takes and returns 4-D tensors as NCHW: ``x.transpose(0, 3, 1, 2)`` of TFLite's NHWC.  Axes of
  4-D tensors are mapped (TFLite ``N H W C`` -> PyTorch dims ``0 2 3 1``); a RESHAPE / FULLY_CONNECTED of
  a 4-D tensor whose element order differs between the layouts (H*W > 1 and C > 1) permutes to NHWC
  first, so the element order is TFLite's.  Tensors of other ranks keep TFLite's layout.
* **Weights**: CONV_2D ``[O, H, W, I]`` -> ``nn.Conv2d`` ``[O, I, H, W]`` (``groups = C_in / I``);
  DEPTHWISE_CONV_2D ``[1, H, W, C*M]`` -> ``[C*M, 1, H, W]``, ``groups = C``; FULLY_CONNECTED ``[O, I]``
  -> ``nn.Linear`` as is.  A missing bias is zeros.  Weights stored quantized (a "hybrid" float model's
  int8 weights) load dequantized; float16 weights behind DEQUANTIZE load as float32.
* **Padding**: ``SAME`` as TensorFlow computes it (``total = max((ceil(in/s) - 1)*s + (k-1)*d + 1 - in,
  0)``, ``total // 2`` before, the rest after): symmetric pads in the layer's own ``padding``,
  asymmetric ones as an explicit ``F.pad`` with zeros before a conv; a pool's padding counts no
  element (average) or never wins (max), as in TFLite.
* **Fused activations** (``RELU``, ``RELU6``, ``RELU_N1_TO_1``) follow the op as ``relu`` / ``relu6`` /
  ``hardtanh(-1, 1)``; ``TANH`` / ``SIGN_BIT`` are refused (TFLite's kernels only clamp, so they ignore them).

Operators (:data:`CONVERTERS`): CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL, DIV,
AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, PAD, PADV2,
SLICE, STRIDED_SLICE (step 1), RESIZE_NEAREST_NEIGHBOR (integer factors), BATCH_MATMUL, SOFTMAX,
LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LEAKY_RELU, HARD_SWISH, ELU, GELU, EXP, LOG, SQRT,
RSQRT, SIN, COS, NEG, SQUARE, POW (constant exponent), MAXIMUM / MINIMUM with a constant scalar (a clamp),
DEQUANTIZE of a constant.  Anything else, a quantized (int8 / uint8) model, or an option outside what
these conversions do is a :class:`TFLiteImportError` naming the operator (index and type) and the fix.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import TabulaError
from .tflite_reader import TFLiteGraph, TFLiteOp, TFLiteTensor, read_tflite_graph

__all__ = ["TFLiteImportError", "TFLiteModule", "load_tflite", "same_pads", "CONVERTERS"]


class TFLiteImportError(TabulaError, ValueError):
    """The ``.tflite`` file holds something the importer does not convert (named, with the fix)."""


#: TFLite NHWC axis -> PyTorch NCHW dim of a 4-D tensor.
_NHWC_TO_NCHW = {0: 0, 1: 2, 2: 3, 3: 1}


def same_pads(in_hw, kernel, stride, dilation=(1, 1)) -> tuple[int, int, int, int]:
    """TensorFlow's ``SAME`` padding of a 2-D window as ``(top, bottom, left, right)`` pixels:
    ``out = ceil(in / stride)``, ``total = max((out - 1)*stride + (k - 1)*dilation + 1 - in, 0)``,
    ``total // 2`` before and the rest after (the extra pixel of an odd total at the bottom / right)."""
    pads = []
    for size, k, s, d in zip(in_hw, kernel, stride, dilation):
        out = math.ceil(size / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        pads += [total // 2, total - total // 2]
    return tuple(pads)  # type: ignore[return-value]


def _dim(axis: int, rank: int) -> int:
    """The PyTorch dim of TFLite axis ``axis`` (negative allowed) of a rank-``rank`` tensor."""
    a = int(axis) % rank
    return _NHWC_TO_NCHW[a] if rank == 4 else a


def _to_torch_layout(a: np.ndarray, rank: int | None = None) -> np.ndarray:
    """A constant operand in PyTorch layout: padded with leading 1s to ``rank`` (NumPy broadcasting, as
    TFLite broadcasts) and, at rank 4, NHWC -> NCHW."""
    a = np.asarray(a, np.float32)
    if rank is not None and a.ndim < rank:
        a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    return a.transpose(0, 3, 1, 2) if a.ndim == 4 else a


def _nhwc(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 2, 3, 1) if x.dim() == 4 else x


def _nchw(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 3, 1, 2) if x.dim() == 4 else x


def _trivial(shape) -> bool:
    """A 4-D NHWC shape whose element order is the same in NCHW (H*W = 1 or C = 1)."""
    return len(shape) == 4 and (shape[1] * shape[2] == 1 or shape[3] == 1)


def _activation(name: str, op: TFLiteOp) -> Callable[[torch.Tensor], torch.Tensor]:
    fused = {"NONE": lambda v: v, "RELU": F.relu, "RELU6": F.relu6, "RELU_N1_TO_1": lambda v: F.hardtanh(v, -1.0, 1.0)}
    if name not in fused:  # TANH / SIGN_BIT: TFLite's own kernels clamp only to these ranges, and ignore them
        raise TFLiteImportError(f"op {op.index} ({op.type}): fused activation {name}, which TFLite's own kernels do "
                                f"not apply to this op (they take {', '.join(fused)}); remove it from the model")
    return fused[name]


Env = dict  # tensor index -> torch value
Step = Callable[[Env], None]


class TFLiteModule(nn.Module):
    """Subgraph 0 of a float TFLite model as a module: ``forward(*inputs)`` takes the graph inputs in
    the file's order (4-D as NCHW) and returns its output (a tuple for several).  Built by
    :func:`load_tflite`; ``input_shapes`` are the inputs' PyTorch shapes (batch as in the file)."""

    def __init__(self, graph: TFLiteGraph, name: str = "model.tflite"):
        super().__init__()
        self.source = name
        for t in graph.inputs:
            if t.dtype != "FLOAT32":
                raise TFLiteImportError(
                    f"{name}: input {t.name!r} is {t.dtype}: this is a quantized TFLite model; tabula quantizes "
                    "float models itself -- give the float32 .tflite")
        self._inputs = [t.index for t in graph.inputs]
        self._outputs = [t.index for t in graph.outputs]
        self.input_shapes = [tuple(int(d) for d in (t.shape[i] for i in (0, 3, 1, 2))) if len(t.shape) == 4
                             else tuple(int(d) for d in t.shape) for t in graph.inputs]
        self._consts: dict[int, str] = {}
        self._steps: list[Step] = []
        self.layers = nn.ModuleDict()
        for op in graph.ops:
            conv = CONVERTERS.get(op.type)
            if conv is None:
                raise TFLiteImportError(
                    f"{name}: op {op.index} is {op.type}, which tabula's TFLite importer does not convert; "
                    f"supported: {', '.join(sorted(CONVERTERS))} (rewrite the model with those, or export it "
                    "to PyTorch / ONNX)")
            self._steps.append(conv(self, op))

    # -- what converters use ----------------------------------------------------------------------
    def const(self, t: TFLiteTensor, rank: int | None = None) -> torch.Tensor:
        """The buffer holding constant ``t`` in PyTorch layout (padded to ``rank`` for broadcasting)."""
        key = (t.index, rank)
        if key not in self._consts:
            name = f"c{t.index}" + (f"_r{rank}" if rank else "")
            self.register_buffer(name, torch.from_numpy(np.ascontiguousarray(_to_torch_layout(t.data, rank))))
            self._consts[key] = name
        return getattr(self, self._consts[key])

    @staticmethod
    def is_const(t: TFLiteTensor | None) -> bool:
        return t is not None and t.data is not None

    def value(self, env: Env, t: TFLiteTensor, rank: int | None = None) -> torch.Tensor:
        """An operand: the activation computed earlier, or the constant in PyTorch layout."""
        if t.index in env:
            return env[t.index]
        if t.data is None:
            raise TFLiteImportError(f"{self.source}: tensor {t.index} ({t.name!r}) is read before any op writes it")
        return self.const(t, rank)

    def forward(self, *inputs: torch.Tensor):
        if len(inputs) != len(self._inputs):
            raise TypeError(f"{self.source} takes {len(self._inputs)} inputs, got {len(inputs)}")
        env: Env = dict(zip(self._inputs, inputs))
        for step in self._steps:
            step(env)
        outs = tuple(env[i] if i in env else getattr(self, self._consts[(i, None)]) for i in self._outputs)
        return outs[0] if len(outs) == 1 else outs


# -- converters: one per TFLite operator; each returns the step that runs it ---------------------------
def _need(cond: bool, op: TFLiteOp, what: str) -> None:
    if not cond:
        raise TFLiteImportError(f"op {op.index} ({op.type}): {what}")


def _conv(m: TFLiteModule, op: TFLiteOp) -> Step:
    x, w, b = op.inputs[0], op.inputs[1], (op.inputs[2] if len(op.inputs) > 2 else None)
    o = op.options
    _need(m.is_const(w), op, "weights are not a constant")
    _need(len(x.shape) == 4, op, f"input of rank {len(x.shape)} (4-D NHWC expected)")
    depthwise = op.type == "DEPTHWISE_CONV_2D"
    cin = int(x.shape[3])
    if depthwise:
        _, kh, kw, cm = w.shape
        mult = cm // cin
        _need(cm == cin * mult and o.get("depth_multiplier", mult) in (mult, 0), op,
              f"weights {w.shape} for {cin} channels and multiplier {o.get('depth_multiplier')}")
        wt, groups, cout = w.data[0].transpose(2, 0, 1)[:, None], cin, cm
    else:
        cout, kh, kw, wi = w.shape
        _need(cin % wi == 0, op, f"input channels {cin} not a multiple of the weights' {wi}")
        wt, groups = w.data.transpose(0, 3, 1, 2), cin // wi
    stride, dilation = o.get("stride", (1, 1)), o.get("dilation", (1, 1))
    top = bottom = left = right = 0
    if o.get("padding") == "SAME":
        top, bottom, left, right = same_pads(x.shape[1:3], (kh, kw), stride, dilation)
    symmetric = top == bottom and left == right
    layer = nn.Conv2d(cin, cout, (kh, kw), stride, padding=(top, left) if symmetric else 0, dilation=dilation,
                      groups=groups)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(wt, np.float32)))
        layer.bias.copy_(torch.from_numpy(b.data.astype(np.float32)) if m.is_const(b) else torch.zeros(cout))
    m.layers[f"op{op.index}"] = layer
    act = _activation(o.get("activation", "NONE"), op)
    pads = None if symmetric else (left, right, top, bottom)
    out = op.outputs[0].index

    def step(env: Env) -> None:
        v = m.value(env, x)
        if pads is not None:
            v = F.pad(v, pads)
        env[out] = act(layer(v))
    return step


def _fully_connected(m: TFLiteModule, op: TFLiteOp) -> Step:
    x, w, b = op.inputs[0], op.inputs[1], (op.inputs[2] if len(op.inputs) > 2 else None)
    o = op.options
    _need(m.is_const(w) and len(w.shape) == 2, op, "weights are not a constant [O, I] matrix")
    _need(o.get("weights_format", 0) == 0, op, "shuffled weights (weights_format) are not supported")
    cout, cin = w.shape
    layer = nn.Linear(cin, cout)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(w.data.astype(np.float32)))
        layer.bias.copy_(torch.from_numpy(b.data.astype(np.float32)) if m.is_const(b) else torch.zeros(cout))
    m.layers[f"op{op.index}"] = layer
    act = _activation(o.get("activation", "NONE"), op)
    keep = bool(o.get("keep_num_dims", False))
    _need(not (keep and len(x.shape) == 4), op, "keep_num_dims on a 4-D input")
    out = op.outputs[0].index
    flat = len(x.shape) != 2 and not keep

    def step(env: Env) -> None:
        v = m.value(env, x)
        if flat:
            v = (v if _trivial(x.shape) else _nhwc(v)).reshape(-1, cin)
        env[out] = act(layer(v))
    return step


def _elementwise(fn: Callable) -> Callable[[TFLiteModule, TFLiteOp], Step]:
    def convert(m: TFLiteModule, op: TFLiteOp) -> Step:
        a, b = op.inputs[0], op.inputs[1]
        _need(not (m.is_const(a) and m.is_const(b)), op, "both operands are constants")
        rank = len(op.outputs[0].shape)
        _need(all(m.is_const(t) or len(t.shape) == rank for t in (a, b)) or rank != 4, op,
              "broadcasting an activation of lower rank against a 4-D one")
        act = _activation(op.options.get("activation", "NONE"), op)
        out = op.outputs[0].index

        def step(env: Env) -> None:
            env[out] = act(fn(m.value(env, a, rank), m.value(env, b, rank)))
        return step
    return convert


def _pool(kind: str) -> Callable[[TFLiteModule, TFLiteOp], Step]:
    def convert(m: TFLiteModule, op: TFLiteOp) -> Step:
        x, o = op.inputs[0], op.options
        _need(len(x.shape) == 4, op, "input is not 4-D")
        k, s = o["filter"], o["stride"]
        top = bottom = left = right = 0
        if o.get("padding") == "SAME":
            top, bottom, left, right = same_pads(x.shape[1:3], k, s)
        _need(top == bottom and left == right, op, f"SAME padding {top, bottom, left, right} is not symmetric "
              "(a pool whose padding PyTorch cannot express; pad the input to a size the window divides)")
        act = _activation(o.get("activation", "NONE"), op)
        out = op.outputs[0].index
        pad = (top, left)
        if kind == "avg":
            def pool(v):
                if pad == (0, 0):
                    return F.avg_pool2d(v, k, s)
                return F.avg_pool2d(v, k, s, pad, count_include_pad=False)
        else:
            def pool(v):
                return F.max_pool2d(v, k, s, pad) if pad != (0, 0) else F.max_pool2d(v, k, s)

        def step(env: Env) -> None:
            env[out] = act(pool(m.value(env, x)))
        return step
    return convert


def _reshape(m: TFLiteModule, op: TFLiteOp) -> Step:
    """RESHAPE / SQUEEZE / EXPAND_DIMS: to the output tensor's shape, in TFLite's (NHWC) element order."""
    x, y = op.inputs[0], op.outputs[0]
    shape = [int(d) for d in y.shape]
    _need(all(d >= 0 for d in shape), op, f"output shape {shape} is not static")
    direct_in = len(x.shape) != 4 or _trivial(x.shape)
    direct_out = len(shape) != 4 or _trivial(shape)
    torch_shape = [shape[i] for i in (0, 3, 1, 2)] if len(shape) == 4 else shape

    batch = bool(shape) and bool(x.shape) and int(x.shape[0]) == shape[0]  # the batch dim stays: run any batch

    def step(env: Env) -> None:
        v = m.value(env, x)
        n = [v.shape[0]] if batch else []
        if direct_in and direct_out:
            env[y.index] = v.reshape(n + torch_shape[len(n):])
            return
        v = v if direct_in else _nhwc(v)
        v = v.reshape(n + shape[len(n):])
        env[y.index] = v if direct_out else _nchw(v)
    return step


def _int_const(m: TFLiteModule, op: TFLiteOp, k: int, what: str) -> list[int]:
    t = op.inputs[k] if len(op.inputs) > k else None
    _need(m.is_const(t), op, f"{what} is not a constant")
    return [int(v) for v in np.asarray(t.data).reshape(-1)]


def _transpose(m: TFLiteModule, op: TFLiteOp) -> Step:
    x, y = op.inputs[0], op.outputs[0]
    perm = _int_const(m, op, 1, "the permutation")
    r = len(x.shape)

    def step(env: Env) -> None:
        v = m.value(env, x)
        v = (_nhwc(v) if r == 4 else v).permute(perm)
        env[y.index] = _nchw(v) if v.dim() == 4 else v
    return step


def _concat(m: TFLiteModule, op: TFLiteOp) -> Step:
    rank = len(op.outputs[0].shape)
    dim = _dim(op.options.get("axis", 0), rank)
    act = _activation(op.options.get("activation", "NONE"), op)
    ins, out = op.inputs, op.outputs[0].index

    def step(env: Env) -> None:
        env[out] = act(torch.cat([m.value(env, t) for t in ins], dim=dim))
    return step


def _pad(m: TFLiteModule, op: TFLiteOp) -> Step:
    x = op.inputs[0]
    pads = np.asarray(_int_const(m, op, 1, "the paddings")).reshape(-1, 2)
    r = len(x.shape)
    value = 0.0
    if op.type == "PADV2" and len(op.inputs) > 2:
        _need(m.is_const(op.inputs[2]), op, "the pad value is not a constant")
        value = float(np.asarray(op.inputs[2].data).reshape(-1)[0])
    torch_pads = [0] * (2 * r)
    for axis in range(r):  # F.pad lists the last dim first
        d = _dim(axis, r)
        torch_pads[2 * (r - 1 - d)], torch_pads[2 * (r - 1 - d) + 1] = int(pads[axis][0]), int(pads[axis][1])
    out = op.outputs[0].index

    def step(env: Env) -> None:
        env[out] = F.pad(m.value(env, x), torch_pads, value=value)
    return step


def _mean(m: TFLiteModule, op: TFLiteOp) -> Step:
    x = op.inputs[0]
    r = len(x.shape)
    dims = sorted({_dim(a, r) for a in _int_const(m, op, 1, "the axes")})
    keep = bool(op.options.get("keep_dims", False))
    out = op.outputs[0].index

    def step(env: Env) -> None:
        env[out] = torch.mean(m.value(env, x), dim=dims, keepdim=keep)
    return step


def _slice(m: TFLiteModule, op: TFLiteOp) -> Step:
    """SLICE (begin, size) and STRIDED_SLICE (begin, end, strides of 1; begin / end masks)."""
    x, o = op.inputs[0], op.options
    r = len(x.shape)
    begin = _int_const(m, op, 1, "begin")
    if op.type == "SLICE":
        size = _int_const(m, op, 2, "size")
        end = [int(x.shape[a]) if s < 0 else b + s for a, (b, s) in enumerate(zip(begin, size))]
    else:
        end = _int_const(m, op, 2, "end")
        strides = _int_const(m, op, 3, "strides") if len(op.inputs) > 3 else [1] * r
        _need(all(s == 1 for s in strides), op, f"strides {strides} (tabula slices with step 1)")
        for key in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask"):
            _need(not o.get(key, 0), op, f"{key} (squeeze or expand the result with RESHAPE instead)")
        _need(not o.get("offset", False), op, "offset=True")
        for a in range(r):
            if o.get("begin_mask", 0) >> a & 1:
                begin[a] = 0
            if o.get("end_mask", 0) >> a & 1:
                end[a] = int(x.shape[a])
    index = [slice(None)] * r
    for a in range(r):
        index[_dim(a, r)] = slice(begin[a], end[a])
    out = op.outputs[0].index

    def step(env: Env) -> None:
        env[out] = m.value(env, x)[tuple(index)]
    return step


def _resize_nearest(m: TFLiteModule, op: TFLiteOp) -> Step:
    x, y, o = op.inputs[0], op.outputs[0], op.options
    _need(len(x.shape) == 4, op, "input is not 4-D")
    _need(not o.get("align_corners", False), op, "align_corners=True (tabula resizes by integer factors)")
    fh, fw = y.shape[1] / x.shape[1], y.shape[2] / x.shape[2]
    _need(fh == int(fh) and fw == int(fw) and fh >= 1 and fw >= 1, op,
          f"{tuple(x.shape[1:3])} -> {tuple(y.shape[1:3])} is not an integer upscaling")

    def step(env: Env) -> None:  # integer factors: half_pixel_centers picks the same pixels
        env[y.index] = F.interpolate(m.value(env, x), scale_factor=(int(fh), int(fw)), mode="nearest")
    return step


def _batch_matmul(m: TFLiteModule, op: TFLiteOp) -> Step:
    a, b, o = op.inputs[0], op.inputs[1], op.options
    out = op.outputs[0].index

    def operand(env: Env, t: TFLiteTensor, adj: bool) -> torch.Tensor:
        v = m.value(env, t)
        v = _nhwc(v) if v.dim() == 4 else v
        return v.transpose(-2, -1) if adj else v

    def step(env: Env) -> None:
        r = operand(env, a, o.get("adj_x", False)) @ operand(env, b, o.get("adj_y", False))
        env[out] = _nchw(r) if r.dim() == 4 else r
    return step


def _softmax(m: TFLiteModule, op: TFLiteOp) -> Step:
    x = op.inputs[0]
    beta = float(op.options.get("beta", 1.0))
    dim = _dim(-1, len(x.shape))
    out = op.outputs[0].index

    def step(env: Env) -> None:
        v = m.value(env, x)
        env[out] = torch.softmax(v if beta == 1.0 else v * beta, dim=dim)
    return step


def _unary(fn: Callable[[TFLiteOp], Callable[[torch.Tensor], torch.Tensor]]) -> Callable[[TFLiteModule, TFLiteOp], Step]:
    def convert(m: TFLiteModule, op: TFLiteOp) -> Step:
        f, x, out = fn(op), op.inputs[0], op.outputs[0].index

        def step(env: Env) -> None:
            env[out] = f(m.value(env, x))
        return step
    return convert


def _pow(m: TFLiteModule, op: TFLiteOp) -> Step:
    e = op.inputs[1]
    _need(m.is_const(e) and np.asarray(e.data).size == 1, op, "the exponent is not a constant scalar")
    p = float(np.asarray(e.data).reshape(-1)[0])
    x, out = op.inputs[0], op.outputs[0].index

    def step(env: Env) -> None:
        env[out] = torch.pow(m.value(env, x), p)
    return step


def _min_max(kind: str) -> Callable[[TFLiteModule, TFLiteOp], Step]:
    def convert(m: TFLiteModule, op: TFLiteOp) -> Step:
        a, b = op.inputs[0], op.inputs[1]
        if m.is_const(a):
            a, b = b, a
        _need(m.is_const(b) and np.asarray(b.data).size == 1, op, "only against a constant scalar (a clamp)")
        c = float(np.asarray(b.data).reshape(-1)[0])
        out = op.outputs[0].index

        def step(env: Env) -> None:
            v = m.value(env, a)
            env[out] = torch.clamp(v, min=c) if kind == "max" else torch.clamp(v, max=c)
        return step
    return convert


def _dequantize(m: TFLiteModule, op: TFLiteOp) -> Step:
    x, y = op.inputs[0], op.outputs[0]
    _need(m.is_const(x), op, "of an activation: this is a quantized TFLite model; give the float32 .tflite")
    y.data = np.asarray(x.data, np.float32)  # float16 / quantized weights: a float constant from here on

    def step(env: Env) -> None:
        pass
    return step


def _leaky(op):
    return lambda v: F.leaky_relu(v, float(op.options.get("alpha", 0.2)))


def _gelu(op):
    return lambda v: F.gelu(v, approximate="tanh" if op.options.get("approximate", False) else "none")


#: TFLite builtin operator -> converter ``(module, op) -> step``.
CONVERTERS: dict[str, Callable[[TFLiteModule, TFLiteOp], Step]] = {
    "CONV_2D": _conv,
    "DEPTHWISE_CONV_2D": _conv,
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _elementwise(torch.add),
    "SUB": _elementwise(torch.sub),
    "MUL": _elementwise(torch.mul),
    "DIV": _elementwise(torch.div),
    "AVERAGE_POOL_2D": _pool("avg"),
    "MAX_POOL_2D": _pool("max"),
    "MEAN": _mean,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "TRANSPOSE": _transpose,
    "CONCATENATION": _concat,
    "PAD": _pad,
    "PADV2": _pad,
    "SLICE": _slice,
    "STRIDED_SLICE": _slice,
    "RESIZE_NEAREST_NEIGHBOR": _resize_nearest,
    "BATCH_MATMUL": _batch_matmul,
    "SOFTMAX": _softmax,
    "LOGISTIC": _unary(lambda op: torch.sigmoid),
    "TANH": _unary(lambda op: torch.tanh),
    "RELU": _unary(lambda op: F.relu),
    "RELU6": _unary(lambda op: F.relu6),
    "RELU_N1_TO_1": _unary(lambda op: lambda v: F.hardtanh(v, -1.0, 1.0)),
    "RELU_0_TO_1": _unary(lambda op: lambda v: torch.clamp(v, 0.0, 1.0)),
    "LEAKY_RELU": _unary(_leaky),
    "HARD_SWISH": _unary(lambda op: F.hardswish),
    "ELU": _unary(lambda op: F.elu),
    "GELU": _unary(_gelu),
    "EXP": _unary(lambda op: torch.exp),
    "LOG": _unary(lambda op: torch.log),
    "SQRT": _unary(lambda op: torch.sqrt),
    "RSQRT": _unary(lambda op: torch.rsqrt),
    "SIN": _unary(lambda op: torch.sin),
    "COS": _unary(lambda op: torch.cos),
    "NEG": _unary(lambda op: torch.neg),
    "SQUARE": _unary(lambda op: lambda v: v * v),
    "POW": _pow,
    "MAXIMUM": _min_max("max"),
    "MINIMUM": _min_max("min"),
    "DEQUANTIZE": _dequantize,
}


def load_tflite(path: str | Path) -> TFLiteModule:
    """The float TFLite model at ``path`` as a :class:`TFLiteModule` in eval mode (see the module
    docstring for layouts and the operators converted).

    Raises:
        FileNotFoundError: no such file.
        ImportError: the ``tflite`` reader is missing (``pip install -e '.[mlperf]'``).
        ValueError: not a TFLite flatbuffer, damaged, or several subgraphs.
        TFLiteImportError: a quantized model, or an operator / option the importer does not convert.
    """
    p = Path(path)
    graph = read_tflite_graph(p)
    try:
        return TFLiteModule(graph, p.name).eval()
    except TFLiteImportError as e:
        msg = str(e)
        raise TFLiteImportError(msg if msg.startswith(p.name) else f"{p.name}: {msg}") from None
