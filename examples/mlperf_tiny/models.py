"""PyTorch ports of the three MLPerf Tiny reference models, with weights loaded from their float ``.tflite``.

* :class:`DSCNN`        keyword spotting (``kws``): input NCHW ``[N, 1, 49, 10]`` MFCC, output ``[N, 12]``
                        class probabilities (softmax).
* :class:`ResNet8`      image classification (``ic``): input NCHW ``[N, 3, 32, 32]`` RGB 0..255, output
                        ``[N, 10]`` CIFAR-10 probabilities (softmax).
* :class:`AutoEncoder`  anomaly detection (``ad``): input ``[N, 640]`` log-mel, output ``[N, 640]``
                        reconstruction (anomaly score = mean squared error vs the input).

The architectures are written out here (they are the suite's Keras models); ``from_tflite`` checks the
file's operator sequence, shapes, strides, paddings and fused activations against the port before it
copies a weight, so a port that drifted from the file is an error, never silently wrong numbers.
TFLite -> PyTorch conventions (one place: :class:`TFConv2d`, :class:`TFLinear`):

* CONV_2D weights ``[O, H, W, I]`` -> ``[O, I, H, W]``; DEPTHWISE_CONV_2D ``[1, H, W, C*M]`` ->
  ``[C*M, 1, H, W]`` with ``groups=C`` (output channel ``c*M + m`` reads input channel ``c`` in both);
  FULLY_CONNECTED ``[O, I]`` as is.  BatchNorm is already folded into the convs' biases in these files.
* ``SAME`` padding: ``out = ceil(in / stride)``, total ``(out - 1)*stride + (k - 1)*dilation + 1 - in``,
  ``total // 2`` before and the rest after (TFLite pads more at the bottom/right).  Symmetric pads go
  into the conv's own ``padding``; asymmetric ones become an explicit ``F.pad`` (zeros) before it.
* A fused ReLU (``FusedActivationFunction RELU``) becomes ``nn.ReLU`` after the op; ADD + ReLU likewise.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tabula.importers.tflite_reader import TFLiteOp, read_tflite

__all__ = ["same_pads", "TFConv2d", "TFLinear", "DSCNN", "ResNet8", "AutoEncoder", "TFLiteMismatch"]


class TFLiteMismatch(ValueError):
    """The ``.tflite`` file does not hold the model the port describes (operator, shape or option)."""


def same_pads(in_hw: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
              dilation: tuple[int, int] = (1, 1)) -> tuple[int, int, int, int]:
    """TFLite/TensorFlow ``SAME`` padding of a 2-D window as ``(top, bottom, left, right)`` pixels.

    ``out = ceil(in / stride)``; ``total = max((out - 1)*stride + (k - 1)*dilation + 1 - in, 0)``;
    ``before = total // 2``, ``after = total - before`` (the extra pixel of an odd total goes to the
    bottom/right, unlike PyTorch's ``padding="same"``, which has no stride)."""
    pads = []
    for size, k, s, d in zip(in_hw, kernel, stride, dilation):
        out = math.ceil(size / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        pads += [total // 2, total - total // 2]
    return tuple(pads)  # type: ignore[return-value]


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)  # type: ignore[return-value]


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise TFLiteMismatch(what)


class TFConv2d(nn.Module):
    """A TFLite CONV_2D (``groups=1``) or DEPTHWISE_CONV_2D (``groups=in_channels``) with ``SAME`` or
    ``VALID`` padding and an optional fused ReLU.  NCHW in and out; ``in_hw`` is the input's (H, W),
    needed to resolve ``SAME``.  ``out_hw`` is the output's (H, W)."""

    def __init__(self, in_channels: int, out_channels: int, kernel, stride=1, *, in_hw, groups: int = 1,
                 padding: str = "SAME", relu: bool = False) -> None:
        super().__init__()
        kernel, stride, in_hw = _pair(kernel), _pair(stride), _pair(in_hw)
        self.padding_mode, self.relu_fused = padding, relu
        top = bottom = left = right = 0
        if padding == "SAME":
            top, bottom, left, right = same_pads(in_hw, kernel, stride)
        elif padding != "VALID":
            raise ValueError(f"padding must be 'SAME' or 'VALID', not {padding!r}")
        symmetric = top == bottom and left == right
        self.pads = None if symmetric else (left, right, top, bottom)  # F.pad order: W then H
        self.conv = nn.Conv2d(in_channels, out_channels, kernel, stride, padding=(top, left) if symmetric else 0,
                              groups=groups)
        self.act = nn.ReLU() if relu else nn.Identity()
        self.out_hw = tuple((n + a + b - k) // s + 1 for n, a, b, k, s in zip(in_hw, (top, left), (bottom, right), kernel, stride))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pads is not None:
            x = F.pad(x, self.pads)
        return self.act(self.conv(x))

    def load(self, op: TFLiteOp) -> None:
        """Copy the weights of ``op`` (CONV_2D or DEPTHWISE_CONV_2D) after checking it matches this layer."""
        c = self.conv
        depthwise = c.groups > 1
        want = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
        where = f"op {op.index} ({op.type})"
        _check(op.type == want, f"{where}: the port expects {want} here")
        o = op.options
        _check(o.get("stride") == c.stride, f"{where}: stride {o.get('stride')}, the port has {c.stride}")
        _check(o.get("dilation", (1, 1)) == (1, 1), f"{where}: dilation {o.get('dilation')} (the port has none)")
        _check(o.get("padding") == self.padding_mode, f"{where}: padding {o.get('padding')}, the port has {self.padding_mode}")
        _check(o.get("activation") == ("RELU" if self.relu_fused else "NONE"),
               f"{where}: fused activation {o.get('activation')}, the port has {'RELU' if self.relu_fused else 'NONE'}")
        w = op.inputs[1].data
        _check(w is not None, f"{where}: weights are not a constant")
        kh, kw = c.kernel_size
        if depthwise:
            mult = c.out_channels // c.in_channels
            _check(c.groups == c.in_channels and o.get("depth_multiplier", mult) == mult,
                   f"{where}: depth multiplier {o.get('depth_multiplier')}, the port has {mult}")
            _check(w.shape == (1, kh, kw, c.out_channels), f"{where}: weights {w.shape}, the port wants [1, {kh}, {kw}, {c.out_channels}]")
            wt = w[0].transpose(2, 0, 1)[:, None]  # [1,H,W,C*M] -> [C*M,1,H,W]
        else:
            _check(w.shape == (c.out_channels, kh, kw, c.in_channels),
                   f"{where}: weights {w.shape}, the port wants [{c.out_channels}, {kh}, {kw}, {c.in_channels}]")
            wt = w.transpose(0, 3, 1, 2)  # [O,H,W,I] -> [O,I,H,W]
        _load_bias_and_weight(c, wt, op, where)


class TFLinear(nn.Module):
    """A TFLite FULLY_CONNECTED (weights ``[O, I]``) with an optional fused ReLU; ``[N, I] -> [N, O]``."""

    def __init__(self, in_features: int, out_features: int, *, relu: bool = False) -> None:
        super().__init__()
        self.relu_fused = relu
        self.fc = nn.Linear(in_features, out_features)
        self.act = nn.ReLU() if relu else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x))

    def load(self, op: TFLiteOp) -> None:
        """Copy the weights of ``op`` (FULLY_CONNECTED) after checking it matches this layer."""
        where = f"op {op.index} ({op.type})"
        _check(op.type == "FULLY_CONNECTED", f"{where}: the port expects FULLY_CONNECTED here")
        _check(op.options.get("activation") == ("RELU" if self.relu_fused else "NONE"),
               f"{where}: fused activation {op.options.get('activation')}, the port has {'RELU' if self.relu_fused else 'NONE'}")
        w = op.inputs[1].data
        _check(w is not None and w.shape == tuple(self.fc.weight.shape),
               f"{where}: weights {None if w is None else w.shape}, the port wants {tuple(self.fc.weight.shape)}")
        _load_bias_and_weight(self.fc, w, op, where)


def _load_bias_and_weight(layer: nn.Module, w: np.ndarray, op: TFLiteOp, where: str) -> None:
    out = layer.weight.shape[0]
    b = op.inputs[2].data if len(op.inputs) > 2 and op.inputs[2] is not None else np.zeros(out, np.float32)
    _check(b is not None and b.shape == (out,), f"{where}: bias {None if b is None else b.shape}, the port wants ({out},)")
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(w, dtype=np.float32)))
        layer.bias.copy_(torch.from_numpy(np.ascontiguousarray(b, dtype=np.float32)))


class _TFLitePort(nn.Module):
    """Common loading: ``TFLITE_OPS`` is the file's operator sequence; ``weighted_layers()`` lists the
    :class:`TFConv2d`/:class:`TFLinear` layers in the file's order; ``INPUT`` the file's NHWC input shape."""

    TFLITE_OPS: list[str] = []
    INPUT: tuple[int, ...] = ()

    def weighted_layers(self) -> list[nn.Module]:
        raise NotImplementedError

    def check_other_op(self, op: TFLiteOp) -> None:
        """Check a non-weighted operator's options against the port: the average pool's window
        (``self.pool``, VALID), ADD's fused ReLU (every ADD of these models has one), softmax beta 1."""
        o = op.options
        if op.type == "AVERAGE_POOL_2D":
            k = _pair(self.pool.kernel_size)
            _check(o.get("filter") == k and o.get("stride") == k and o.get("padding") == "VALID",
                   f"op {op.index}: average pool {o}, the port pools {k} with stride {k}, VALID")
        elif op.type == "ADD":
            _check(o.get("activation") == "RELU", f"op {op.index}: ADD with {o.get('activation')} (the port has RELU)")
        elif op.type == "SOFTMAX":
            _check(o.get("beta", 1.0) == 1.0, f"op {op.index}: softmax beta {o.get('beta')} (the port has 1)")

    @classmethod
    def from_tflite(cls, path: str | Path) -> "_TFLitePort":
        """The port with the weights of the float ``.tflite`` at ``path``, in eval mode.

        Raises:
            TFLiteMismatch: the file's operators, shapes or options differ from the port.
            FileNotFoundError, ImportError, ValueError: see :func:`read_tflite`.
        """
        ops = read_tflite(path)
        types = [op.type for op in ops]
        _check(types == cls.TFLITE_OPS, f"{path}: operators {types}, the {cls.__name__} port expects {cls.TFLITE_OPS}")
        x = ops[0].inputs[0]
        _check(x.shape == cls.INPUT, f"{path}: input {x.shape}, the {cls.__name__} port expects {cls.INPUT} (NHWC)")
        model = cls()
        weighted = [op for op in ops if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")]
        layers = model.weighted_layers()
        _check(len(weighted) == len(layers), f"{path}: {len(weighted)} weighted ops, the port has {len(layers)} layers")
        for layer, op in zip(layers, weighted):
            layer.load(op)
        for op in ops:
            if op not in weighted:
                model.check_other_op(op)
        return model.eval()


class DSCNN(_TFLitePort):
    """MLPerf Tiny keyword spotting DS-CNN (the suite's ``kws_ref_model``).

    conv 10x4 stride 2 (1 -> 64, SAME: pads 4/5 rows, 1/1 columns) + ReLU, then 4 x [depthwise 3x3
    (SAME) + ReLU, pointwise 1x1 (64 -> 64) + ReLU], average pool 25x5, flatten, linear 64 -> 12,
    softmax.  Input NCHW ``[N, 1, 49, 10]`` (49 MFCC frames x 10 coefficients), output ``[N, 12]``
    probabilities: down, go, left, no, off, on, right, stop, up, yes, silence, unknown."""

    TFLITE_OPS = (["CONV_2D"] + ["DEPTHWISE_CONV_2D", "CONV_2D"] * 4
                  + ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"])
    INPUT = (1, 49, 10, 1)

    def __init__(self, n_classes: int = 12, filters: int = 64, n_blocks: int = 4) -> None:
        super().__init__()
        self.conv0 = TFConv2d(1, filters, (10, 4), 2, in_hw=(49, 10), relu=True)
        hw = self.conv0.out_hw
        self.dw = nn.ModuleList(TFConv2d(filters, filters, 3, in_hw=hw, groups=filters, relu=True) for _ in range(n_blocks))
        self.pw = nn.ModuleList(TFConv2d(filters, filters, 1, in_hw=hw, relu=True) for _ in range(n_blocks))
        self.pool = nn.AvgPool2d(hw)
        self.fc = TFLinear(filters, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv0(x)
        for dw, pw in zip(self.dw, self.pw):
            x = pw(dw(x))
        x = torch.flatten(self.pool(x), 1)
        return torch.softmax(self.fc(x), dim=-1)

    def weighted_layers(self) -> list[nn.Module]:
        return [self.conv0, *(m for pair in zip(self.dw, self.pw) for m in pair), self.fc]


class ResidualBlock(nn.Module):
    """ResNet-8 block: conv 3x3 (stride s) + ReLU, conv 3x3; shortcut = the input, or a 1x1 conv
    (stride s) when the shape changes; ReLU(shortcut + main).  In the file: conv1, conv2, [shortcut], ADD."""

    def __init__(self, cin: int, cout: int, stride: int, in_hw: tuple[int, int]) -> None:
        super().__init__()
        self.conv1 = TFConv2d(cin, cout, 3, stride, in_hw=in_hw, relu=True)
        self.conv2 = TFConv2d(cout, cout, 3, 1, in_hw=self.conv1.out_hw)
        self.shortcut = TFConv2d(cin, cout, 1, stride, in_hw=in_hw) if (stride != 1 or cin != cout) else None
        self.relu = nn.ReLU()
        self.out_hw = self.conv2.out_hw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.conv1(x))
        s = x if self.shortcut is None else self.shortcut(x)
        return self.relu(s + y)

    def layers(self) -> list[nn.Module]:
        return [self.conv1, self.conv2] + ([self.shortcut] if self.shortcut is not None else [])


class ResNet8(_TFLitePort):
    """MLPerf Tiny image classification ResNet-8 (the suite's ``pretrainedResnet``).

    conv 3x3 (3 -> 16) + ReLU; residual blocks 16 -> 16 (stride 1), 16 -> 32 (stride 2), 32 -> 64
    (stride 2; stride-2 SAME 3x3 pads 0 top/left and 1 bottom/right); average pool 8x8, flatten,
    linear 64 -> 10, softmax.  Input NCHW ``[N, 3, 32, 32]`` RGB 0..255 (no normalisation), output
    ``[N, 10]`` CIFAR-10 probabilities."""

    TFLITE_OPS = (["CONV_2D"] + ["CONV_2D", "CONV_2D", "ADD"] + ["CONV_2D", "CONV_2D", "CONV_2D", "ADD"] * 2
                  + ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"])
    INPUT = (1, 32, 32, 3)

    def __init__(self, n_classes: int = 10) -> None:
        super().__init__()
        self.stem = TFConv2d(3, 16, 3, 1, in_hw=(32, 32), relu=True)
        b1 = ResidualBlock(16, 16, 1, self.stem.out_hw)
        b2 = ResidualBlock(16, 32, 2, b1.out_hw)
        b3 = ResidualBlock(32, 64, 2, b2.out_hw)
        self.blocks = nn.ModuleList([b1, b2, b3])
        self.pool = nn.AvgPool2d(b3.out_hw)
        self.fc = TFLinear(64, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        x = torch.flatten(self.pool(x), 1)
        return torch.softmax(self.fc(x), dim=-1)

    def weighted_layers(self) -> list[nn.Module]:
        return [self.stem, *(m for b in self.blocks for m in b.layers()), self.fc]


class AutoEncoder(_TFLitePort):
    """MLPerf Tiny anomaly detection FC autoencoder (the suite's ``ad01``; BatchNorm folded in the file).

    linear 640 -> 128 -> 128 -> 128 -> 128 -> 8 -> 128 -> 128 -> 128 -> 128 (each + ReLU) -> 640.
    Input ``[N, 640]`` (5 frames x 128 log-mel bins), output ``[N, 640]`` reconstruction."""

    SIZES = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640)
    TFLITE_OPS = ["FULLY_CONNECTED"] * 10
    INPUT = (1, 640)

    def __init__(self) -> None:
        super().__init__()
        n = len(self.SIZES) - 1
        self.layers = nn.ModuleList(TFLinear(a, b, relu=i < n - 1) for i, (a, b) in enumerate(zip(self.SIZES, self.SIZES[1:])))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def weighted_layers(self) -> list[nn.Module]:
        return list(self.layers)
