"""A MobileNet-style network of tabula's own in the MLPerf Tiny person-detection shape: MobileNetV1 with
width multiplier alpha = 0.25 on a 96x96 grayscale image, two classes, softmax.

Input: float32 NCHW ``[N, 1, 96, 96]``; output: ``[N, 2]`` probabilities.  Layers (channels at alpha 0.25):
conv 3x3/2 1->8, then 13 depthwise-separable blocks (3x3 depthwise + BatchNorm + ReLU6, 1x1 pointwise +
BatchNorm + ReLU6) 8->16, 16->32/2, 32->32, 32->64/2, 64->64, 64->128/2, 5 x 128->128, 128->256/2,
256->256, a 3x3 global average pool, a linear 256->2 and the softmax (7.5 M MACs, 0.21 M weights).
The weights are random (seeded); :func:`build` sets the BatchNorms' running statistics from data, so
every layer's activations have a sensible range, as a trained network's would.
"""
from __future__ import annotations

import torch
from torch import nn

ALPHA = 0.25
#: (output channels at alpha 1, stride) of the 13 depthwise-separable blocks of MobileNetV1
BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]


def _conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU6()]


class MobileNetV1(nn.Module):
    """MobileNetV1 (alpha 0.25, 96x96x1 -> 2 classes), see the module docstring."""

    def __init__(self, alpha: float = ALPHA, classes: int = 2) -> None:
        super().__init__()
        c = int(32 * alpha)
        layers = _conv_bn(1, c, 3, 2)
        for width, stride in BLOCKS:
            out = int(width * alpha)
            layers += _conv_bn(c, c, 3, stride, groups=c) + _conv_bn(c, out, 1, 1)
            c = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d(3)
        self.fc = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


def images(n: int, seed: int) -> torch.Tensor:
    """``n`` grayscale 96x96 test images in [-1, 1]: smooth random fields (blurred noise), float32 NCHW."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 24, 24, generator=g)
    x = nn.functional.interpolate(x, size=(96, 96), mode="bilinear", align_corners=False)
    return torch.tanh(x + 0.1 * torch.randn(n, 1, 96, 96, generator=g))


def build(seed: int = 0, stats_images: int = 32) -> MobileNetV1:
    """The network with seeded random weights and BatchNorm statistics of ``stats_images`` images (eval mode)."""
    torch.manual_seed(seed)
    model = MobileNetV1()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None  # a cumulative average over the passes below
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.2, 0.2)
    nn.init.normal_(model.fc.weight, std=1.0)  # logits that differ: the softmax sees more than ties
    model.train()
    with torch.no_grad():
        model(images(stats_images, seed + 1))
    return model.eval()
