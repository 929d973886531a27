"""The MLPerf Tiny reference models as tabula examples: ``kws`` (DS-CNN), ``ic`` (ResNet-8), ``ad`` (FC autoencoder).

The pretrained weights, their TFLite int8 twins (the numerics peer) and real inputs live outside the
repository, in ``../shared/mlperf_tiny/`` beside the checkout (MLCommons ``tiny``, Apache-2.0; see that
folder's README), or wherever ``$TABULA_MLPERF_TINY`` points.  This package reads them:

* :func:`load_model` -- the PyTorch port (:mod:`.models`) with the float ``.tflite``'s weights;
* :func:`load_inputs` -- the shipped inputs in PyTorch layout (NHWC images -> NCHW) and ``y_float``;
* :func:`split` -- which samples calibrate and which test (even indices calibrate, odd ones test:
  kws 8/7, ic 16/16, ad 20/20; no sample is used for both).

``python examples/mlperf_tiny/export.py --model ad --out DIR`` writes ``model.pt2``, ``calib.npz``
and ``test.npz`` for ``scons example=ad`` (SCons runs it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Spec", "SPECS", "data_dir", "load_model", "load_inputs", "split", "source_files"]

#: The repository root (examples/mlperf_tiny/ is two levels below it).
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Spec:
    """One reference model: its port class (name in :mod:`.models`), files and task.

    ``task`` is ``"classification"`` (softmax probabilities: top-1 agreement is meaningful) or
    ``"anomaly"`` (reconstruction: the score is the per-sample mean squared error vs the input)."""

    name: str
    title: str
    port: str
    float_tflite: str
    int8_tflite: str
    inputs: str
    task: str


SPECS: dict[str, Spec] = {
    "kws": Spec("kws", "keyword spotting, DS-CNN", "DSCNN", "kws_ref_model_float32.tflite", "kws_ref_model.tflite",
                "kws_inputs.npz", "classification"),
    "ic": Spec("ic", "image classification, ResNet-8", "ResNet8", "pretrainedResnet.tflite",
               "pretrainedResnet_quant.tflite", "ic_inputs.npz", "classification"),
    "ad": Spec("ad", "anomaly detection, FC autoencoder", "AutoEncoder", "ad01_fp32.tflite", "ad01_int8.tflite",
               "ad_inputs.npz", "anomaly"),
}


def data_dir() -> Path:
    """Where the MLPerf Tiny files are: ``$TABULA_MLPERF_TINY``, else ``../shared/mlperf_tiny`` next to
    the checkout.  Raises FileNotFoundError naming both when neither exists."""
    env = os.environ.get("TABULA_MLPERF_TINY")
    d = Path(env) if env else ROOT.parent / "shared" / "mlperf_tiny"
    if not d.is_dir():
        raise FileNotFoundError(
            f"the MLPerf Tiny files are not in {d}; set TABULA_MLPERF_TINY=<folder with kws_ref_model_float32.tflite, "
            "pretrainedResnet.tflite, ad01_fp32.tflite, their int8 twins and *_inputs.npz>"
        )
    return d


def _spec(name: str) -> Spec:
    if name not in SPECS:
        raise ValueError(f"unknown MLPerf Tiny model {name!r}; choose one of {', '.join(SPECS)}")
    return SPECS[name]


def source_files(name: str) -> list[Path]:
    """The data files the example ``name`` is built from (float .tflite, int8 .tflite, inputs .npz);
    FileNotFoundError naming the first one missing."""
    s, d = _spec(name), data_dir()
    files = [d / s.float_tflite, d / s.int8_tflite, d / s.inputs]
    for f in files:
        if not f.is_file():
            raise FileNotFoundError(f"{f} not found (MLPerf Tiny model {name!r}); set TABULA_MLPERF_TINY to the folder that holds it")
    return files


def load_model(name: str):
    """The float PyTorch port of model ``name`` (``"kws"``, ``"ic"``, ``"ad"``) with the float .tflite's
    weights, in eval mode.  Raises ValueError (unknown name, or a file that does not match the port)
    and FileNotFoundError (data not found)."""
    from . import models

    s = _spec(name)
    return getattr(models, s.port).from_tflite(source_files(name)[0])


def load_inputs(name: str) -> dict[str, np.ndarray]:
    """The shipped inputs of ``name``: ``x`` float32 in PyTorch layout (kws ``[n, 1, 49, 10]``, ic
    ``[n, 3, 32, 32]`` NCHW; ad ``[n, 640]``), ``x_tflite`` the same in TFLite's NHWC layout,
    ``y_float`` (the pure-float outputs of the model's weights) and ``y_float_tflite``."""
    with np.load(source_files(name)[2]) as z:
        out = {k: z[k] for k in z.files}
    x = out["x"].astype(np.float32)
    out["x_tflite"] = x
    out["x"] = np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if x.ndim == 4 else x
    return out


def split(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(calibration indices, test indices)`` of ``n`` samples: even indices calibrate, odd ones
    test, so the two sets never share a sample and both span the recording."""
    idx = np.arange(n)
    return idx[0::2], idx[1::2]
