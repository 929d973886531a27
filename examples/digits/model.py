"""The default example: a small CNN for scikit-learn's bundled 8x8 handwritten digits.

Input: float32 NCHW ``[N, 1, 8, 8]`` with pixel values scaled to [0, 1]; output: ``[N, 10]`` logits.
It uses SiLU (the op whose quantization rule this project was founded on) and tanh (a second TABLE op).
"""
from __future__ import annotations

import torch
from torch import nn


class DigitsCNN(nn.Module):
    """conv3x3(1->8) -> SiLU -> maxpool2 -> conv3x3(8->16) -> tanh -> maxpool2 -> flatten -> linear(64->10)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.act1 = nn.SiLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.act2 = nn.Tanh()
        self.pool2 = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.act1(self.conv1(x)))
        x = self.pool2(self.act2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))
