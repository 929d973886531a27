"""The seven models of issue 21 (random weights, fixed seeds), shared by ``benchmarks/coverage.py`` and the
ExecuTorch side (``benchmarks/_coverage_executorch.py``, run in its own venv): torch only.

| name | model | input |
|---|---|---|
| block | hand-written pre-norm transformer block: LayerNorm, qkv linear, 2 heads (``qkv[0]``, 4-D matmul, softmax), proj, GELU MLP | [1, 16, 32] |
| encoder | ``nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)`` | [1, 16, 32] |
| kws1d | Conv1d + BatchNorm1d + ReLU x 4, ``AdaptiveAvgPool1d(1)``, linear | [1, 10, 49] |
| lstm | ``nn.LSTM(16, 32, batch_first=True)``, linear on the last step (``y[:, -1]``) | [1, 20, 16] |
| gru | ``nn.GRU(16, 32, num_layers=2, batch_first=True)``, linear on the last step | [1, 20, 16] |
| unet | tiny U-Net: two max-pools, ``ConvTranspose2d`` and bilinear upsampling, cat skips | [1, 3, 16, 16] |
| tcn | temporal conv net: dilated causal Conv1d (left padding) x 4, ``fc(y[:, :, -1])`` | [1, 8, 32] |
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, c = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = ((q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5).softmax(-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class Kws1d(nn.Module):
    def __init__(self, cin=10, width=32, classes=12):
        super().__init__()
        layers, c = [], cin
        for _ in range(4):
            layers += [nn.Conv1d(c, width, 3, padding=1), nn.BatchNorm1d(width), nn.ReLU()]
            c = width
        self.features, self.pool, self.fc = nn.Sequential(*layers), nn.AdaptiveAvgPool1d(1), nn.Linear(width, classes)
        for m in self.modules():  # BatchNorm statistics as after training, not the identity
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.fc(self.pool(self.features(x)).flatten(1))


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn, self.fc = nn.LSTM(16, 32, batch_first=True), nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn, self.fc = nn.GRU(16, 32, num_layers=2, batch_first=True), nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


class UNet(nn.Module):
    def __init__(self):
        super().__init__()

        def conv(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())

        self.e1, self.e2, self.mid = conv(3, 8), conv(8, 16), conv(16, 16)
        self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.d2, self.d1 = conv(32, 8), conv(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.mid(F.max_pool2d(b, 2))
        d = self.d2(torch.cat([self.up(c), b], 1))
        u = F.interpolate(d, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.d1(torch.cat([u, a], 1)))


class Tcn(nn.Module):
    def __init__(self, cin=8, width=16, classes=5):
        super().__init__()
        layers, c = [], cin
        for d in (1, 2, 4, 8):
            layers += [nn.ConstantPad1d((2 * d, 0), 0.0), nn.Conv1d(c, width, 3, dilation=d), nn.ReLU()]
            c = width
        self.features, self.fc = nn.Sequential(*layers), nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(self.features(x)[:, :, -1])


#: name -> (class, input shape with batch 1)
MODELS = {
    "block": (Block, (1, 16, 32)),
    "encoder": (Encoder, (1, 16, 32)),
    "kws1d": (Kws1d, (1, 10, 49)),
    "lstm": (Lstm, (1, 20, 16)),
    "gru": (Gru, (1, 20, 16)),
    "unet": (UNet, (1, 3, 16, 16)),
    "tcn": (Tcn, (1, 8, 32)),
}

#: Calibration and test samples per model (disjoint; fixed seeds).
N_CALIB, N_TEST = 32, 32


def make(name: str):
    """``(model in eval mode, calibration inputs [N_CALIB, ...], test inputs [N_TEST, ...])``, float32."""
    cls, shape = MODELS[name]
    torch.manual_seed(sorted(MODELS).index(name))
    model = cls().eval()
    x = torch.randn(N_CALIB + N_TEST, *shape[1:])
    return model, x[:N_CALIB], x[N_CALIB:]
