"""Distilling a keyword spotter from the MLPerf Tiny DS-CNN, for the sequence examples (``examples/kws_gru``,
``examples/kws_transformer``).

There are no labelled keyword recordings in this repository, so a sequence model over the 49 MFCC frames
of a one-second window (``[N, 49, 10]``: each frame's 10 coefficients a step) is trained to match the
float DS-CNN's (``kws_ref_model_float32.tflite``) log probabilities on the 15 shipped windows, each shifted
in time (up to 8 frames either way, edges repeated), scaled (0.8-1.25) and with noise (0.3 of the
coefficients' spread).  Its figure is top-1 agreement with the DS-CNN, not a keyword accuracy.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from . import load_inputs, load_model


def frames(x_nchw: np.ndarray) -> np.ndarray:
    """The kws example's ``[N, 1, 49, 10]`` inputs as sequences ``[N, 49, 10]``."""
    return np.ascontiguousarray(x_nchw[:, 0])


def augment(x: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` variants of the windows ``x`` ``[k, 49, 10]``: a time shift (edges repeated), a scale, noise."""
    src = x[rng.integers(0, len(x), n)]
    shift = rng.integers(-8, 9, n)
    idx = np.clip(np.arange(49)[None, :] - shift[:, None], 0, 48)
    out = np.take_along_axis(src, idx[:, :, None], axis=1)
    out = out * rng.uniform(0.8, 1.25, (n, 1, 1)) + rng.standard_normal(out.shape) * 0.3 * x.std(axis=(0, 1))
    return out.astype(np.float32)


def teacher_logp(x: np.ndarray) -> np.ndarray:
    """The DS-CNN's log probabilities on sequences ``x`` ``[n, 49, 10]``."""
    dscnn = load_model("kws")
    with torch.no_grad():
        p = dscnn(torch.from_numpy(x[:, None]))
    return torch.log(p.clamp_min(1e-7)).numpy()


def distill(make: Callable[[], nn.Module], epochs: int = 12, n: int = 4096, seed: int = 0, lr: float = 3e-3):
    """Train ``make()`` (``[N, 49, 10]`` -> ``[N, 12]`` logits; made after the teacher, from torch's seed
    ``seed``) on ``n`` augmented windows against the DS-CNN (KL divergence, Adam, batches of 128); returns
    (the model in eval mode, calibration x ``[64, 49, 10]``, test x ``[64, 49, 10]``, test labels = the
    DS-CNN's class ``[64]`` int64).  Seeded: the same model and files every run.

    Raises FileNotFoundError / ImportError when the MLPerf Tiny kws files are missing (examples/mlperf_tiny)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    base = frames(load_inputs("kws")["x"])
    x = augment(base, n, rng)
    t = torch.from_numpy(teacher_logp(x))
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    xs = torch.from_numpy(x)
    for _ in range(epochs):
        for i in torch.randperm(n).split(128):
            loss = nn.functional.kl_div(torch.log_softmax(model(xs[i]), 1), t[i], log_target=True, reduction="batchmean")
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    test_rng = np.random.default_rng(seed + 1)
    calib, test = augment(base, 64, test_rng), augment(base, 64, test_rng)
    return model, calib, test, teacher_logp(test).argmax(1)


def write_example(out, model: nn.Module, calib: np.ndarray, test: np.ndarray, y: np.ndarray) -> float:
    """Write ``model.pt2`` (exported with a batch-1 input; renamed into place only when whole), ``calib.npz``
    (``x``) and ``test.npz`` (``x``, ``y``) into the folder ``out``; returns the float model's top-1 agreement
    with ``y`` on ``test``."""
    from pathlib import Path

    with torch.no_grad():
        agree = float((model(torch.from_numpy(test)).argmax(1).numpy() == y).mean())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ep = torch.export.export(model, (torch.from_numpy(calib[:1]),))
    tmp = out / "model.tmp.pt2"
    torch.export.save(ep, tmp)
    tmp.replace(out / "model.pt2")
    np.savez(out / "calib.npz", x=calib)
    np.savez(out / "test.npz", x=test, y=y)
    return agree
