"""The softmax accuracy sets: random and edge rows of input codes, at tiny to large input scales, and
the references they are measured against (PyTorch's ``q(softmax(dq(x)))`` and the exact softmax).
Used by ``tests/ops/test_softmax.py`` and ``benchmarks/softmax_error.py``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["LENGTHS", "SCALES", "INPUT_ZERO_POINT", "rows", "torch_reference", "exact_reference", "output_grid"]

#: Row lengths of the sets: a single class, a pair, the MLPerf classifiers (10, 12), a long row.
LENGTHS = (1, 2, 10, 12, 1000)

#: Input scales per dtype, tiny to large (int8 logits of +-0.03 up to +-256; int16 of +-0.003 up to +-65534).
SCALES = {"int8": (2.0**-12, 2.0**-6, 0.05, 0.25, 2.0), "int16": (1e-7, 2.0**-15, 1e-3, 0.01, 0.1, 2.0)}

#: The input zero point of the int8 sets (int16 is symmetric).
INPUT_ZERO_POINT = {"int8": 5, "int16": 0}


def output_grid(dtype: str) -> tuple[float, int, int, int]:
    """``(scale, zero point, qmin, qmax)`` of softmax's fixed output grid (:data:`tabula.rules.SOFTMAX_GRID`)."""
    from ..rules import SOFTMAX_GRID

    g = SOFTMAX_GRID[dtype]
    return g.scale, g.zero_point, g.qmin, g.qmax


def rows(dtype: str, length: int, scale: float, rng: np.random.Generator, n: int = 48) -> dict[str, np.ndarray]:
    """Named sets of rows (``[rows, length]`` codes of ``dtype``) for one row length and input scale:

    ``uniform`` codes over the whole range; ``logits`` normal logits of spread 0.1 to 30 (real units)
    quantized at ``scale``; ``ties`` two or more maxima; ``equal`` all-equal rows (min, 0, max and
    random codes); ``huge`` one logit at the top of the range and the rest at the bottom (or random
    low); ``saturated`` every code at the range's ends; ``alternating`` max / min codes."""
    lo, hi = (-128, 127) if dtype == "int8" else (-32767, 32767)
    out: dict[str, np.ndarray] = {}
    out["uniform"] = rng.integers(lo, hi, (n, length), endpoint=True)
    spread = rng.uniform(0.1, 30.0, (n, 1))
    out["logits"] = np.clip(np.rint(rng.normal(0.0, 1.0, (n, length)) * spread / scale), lo, hi)
    ties = rng.integers(lo, hi, (n, length), endpoint=True)
    top = ties.max(axis=1, keepdims=True)
    k = min(length, 3)
    ties[:, :k] = top  # the first k share the max (k = 1 or 2 for short rows)
    out["ties"] = np.array([rng.permutation(r) for r in ties])
    equal = [np.full(length, v) for v in (lo, 0, hi)] + [np.full(length, v) for v in rng.integers(lo, hi, 5, endpoint=True)]
    out["equal"] = np.stack(equal)
    huge = np.full((4, length), lo)
    huge[1:, :] = rng.integers(lo, lo + (hi - lo) // 4, (3, length), endpoint=True)
    huge[np.arange(4), rng.integers(0, length, 4)] = hi
    out["huge"] = huge
    out["saturated"] = np.stack([np.full(length, lo), np.full(length, hi)])
    out["alternating"] = np.stack([np.where(np.arange(length) % 2 == 0, hi, lo), np.where(np.arange(length) % 2 == 0, lo, hi)])
    return {k: v.astype(dtype) for k, v in out.items()}


def torch_reference(x: np.ndarray, scale: float, zero_point: int, dtype: str, axis: int = -1) -> np.ndarray:
    """PyTorch's ``quantize(softmax(dequantize(x)))`` (float32, its own rounding) on the softmax output
    grid: what the quantized model computes in PT2E's simulation."""
    import torch
    import torchao.quantization.pt2e  # noqa: F401  registers quantized_decomposed

    qd = torch.ops.quantized_decomposed
    td = getattr(torch, dtype)
    s_out, zp_out, qmin, qmax = output_grid(dtype)
    lo, hi = (-128, 127) if dtype == "int8" else (-32768, 32767)
    f = qd.dequantize_per_tensor(torch.from_numpy(np.ascontiguousarray(x)), scale, zero_point, lo, hi, td)
    y = torch.softmax(f, axis)
    return qd.quantize_per_tensor(y, s_out, zp_out, qmin, qmax, td).numpy()


def exact_reference(x: np.ndarray, scale: float, axis: int = -1) -> np.ndarray:
    """The exact softmax of the codes (float64), on the output grid before rounding: ``p / s_out + zp``
    (the input zero point cancels)."""
    dtype = np.asarray(x).dtype.name
    s_out, zp_out, _, _ = output_grid(dtype)
    f = np.asarray(x, dtype=np.float64) * float(scale)
    p = np.exp(f - f.max(axis=axis, keepdims=True))
    return p / p.sum(axis=axis, keepdims=True) / s_out + zp_out
