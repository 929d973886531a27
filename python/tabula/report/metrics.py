"""Validation metrics per model output, as STM32Cube.AI's ``validate`` reports them: accuracy (with
labels), RMSE, MAE, L2 relative error, cosine similarity and top-1 agreement, of one set of outputs
against another (the device against the float model, the device against the integer reference).

Definitions, over every sample and element of one output (``t`` the outputs tested, ``r`` the reference
they are compared with, both float, ``[n, ...]``):

- ``rmse`` = sqrt(mean((t - r)^2)); ``mae`` = mean(|t - r|);
- ``l2r`` = ||t - r||_2 / ||r||_2 (relative L2 error; None when r is all zeros);
- ``cos`` = <t, r> / (||t|| ||r||) over the flattened outputs (1 when both are zero);
- ``top1`` = the share of samples whose argmax (over each sample's elements) is the same in t and r
  (None for outputs of one element per sample);
- ``accuracy`` = the share of samples whose argmax is the label (with labels, for the first output).
"""
from __future__ import annotations

import numpy as np

__all__ = ["compare", "output_metrics"]


def compare(test: np.ndarray, ref: np.ndarray) -> dict:
    """The module's metrics of ``test`` against ``ref`` (same shape ``[n, ...]``).

    Raises:
        ValueError: the shapes differ."""
    t = np.asarray(test, np.float64)
    r = np.asarray(ref, np.float64)
    if t.shape != r.shape:
        raise ValueError(f"cannot compare outputs of shape {t.shape} with {r.shape}")
    n = int(t.shape[0]) if t.ndim else 0
    if t.size == 0:
        return {"n_samples": n, "rmse": None, "mae": None, "l2r": None, "cos": None, "top1": None}
    d = t - r
    rn, tn = float(np.linalg.norm(r)), float(np.linalg.norm(t))
    cos = 1.0 if rn == 0.0 and tn == 0.0 else (0.0 if rn == 0.0 or tn == 0.0 else float((t * r).sum()) / (tn * rn))
    flat_t, flat_r = t.reshape(n, -1), r.reshape(n, -1)
    top1 = None if flat_t.shape[1] < 2 else float((flat_t.argmax(1) == flat_r.argmax(1)).mean())
    return {"n_samples": n, "rmse": float(np.sqrt((d * d).mean())), "mae": float(np.abs(d).mean()),
            "l2r": float(np.linalg.norm(d)) / rn if rn else None, "cos": round(cos, 9), "top1": top1}


def output_metrics(device: list[np.ndarray], reference: list[np.ndarray], floats: list[np.ndarray],
                   labels: np.ndarray | None = None, names: list[str] | None = None) -> list[dict]:
    """``results.json`` ``metrics``: per model output ``k`` (``index``, ``name``) the metrics of the
    device's outputs against the float model's (``device_vs_float``), against the integer reference's
    (``device_vs_reference``) and, for reference, of the reference against float
    (``reference_vs_float``); with ``labels`` the first output's ``accuracy`` of each.  The device may
    have answered fewer samples than the others: the comparison is over those it answered."""
    out = []
    for k, (d, r, f) in enumerate(zip(device, reference, floats)):
        m = len(d)
        entry = {"index": k, "name": names[k] if names else str(k), "n_samples": m,
                 "device_vs_float": compare(d, f[:m]), "device_vs_reference": compare(d, r[:m]),
                 "reference_vs_float": compare(r, f)}
        if labels is not None and k == 0 and m:
            y = np.asarray(labels)
            acc = lambda v, y=y: float((np.asarray(v).reshape(len(v), -1).argmax(1) == y[: len(v)]).mean())  # noqa: E731
            entry["accuracy"] = {"device": acc(d), "reference": acc(r), "float": acc(f)}
        out.append(entry)
    return out
