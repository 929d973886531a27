"""The MLPerf Tiny reference models as tabula examples: ``kws`` (DS-CNN), ``ic`` (ResNet-8), ``ad`` (FC autoencoder).

Where the files come from (:func:`source_files`), first match wins:

1. ``$TABULA_MLPERF_TINY`` (a folder with the files), else ``../shared/mlperf_tiny/`` beside the checkout
   (the offline copy of the project's machines; its README describes every file);
2. otherwise the ``.tflite`` files (pretrained weights and their TFLite int8 twins, the numerics peer)
   are downloaded once from the MLCommons ``tiny`` repository at a pinned commit, checksum-verified, into
   ``~/.cache/tabula/mlperf_tiny`` (:mod:`.fetch`), and the evaluation inputs are the copies shipped in
   ``examples/mlperf_tiny/inputs/`` (made by this project from public recordings and photos -- they are
   not in the MLCommons repository; ``inputs/README.md``).

This package reads them:

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


#: The evaluation inputs this repository ships (the same arrays as ``../shared/mlperf_tiny/*_inputs.npz``).
SHIPPED_INPUTS = Path(__file__).resolve().parent / "inputs"


def data_dir() -> Path | None:
    """The folder of MLPerf Tiny files this machine has: ``$TABULA_MLPERF_TINY``, else
    ``../shared/mlperf_tiny`` next to the checkout; None when neither is set or present (then
    :func:`source_files` downloads the ``.tflite`` files and uses the shipped inputs).
    Raises FileNotFoundError when ``$TABULA_MLPERF_TINY`` names a folder that does not exist."""
    env = os.environ.get("TABULA_MLPERF_TINY")
    if env:
        if not Path(env).is_dir():
            raise FileNotFoundError(
                f"TABULA_MLPERF_TINY={env} is not a folder; point it at the folder with kws_ref_model_float32.tflite, "
                "pretrainedResnet.tflite, ad01_fp32.tflite and their int8 twins, or unset it to download them")
        return Path(env)
    d = ROOT.parent / "shared" / "mlperf_tiny"
    return d if d.is_dir() else None


def _spec(name: str) -> Spec:
    if name not in SPECS:
        raise ValueError(f"unknown MLPerf Tiny model {name!r}; choose one of {', '.join(SPECS)}")
    return SPECS[name]


def source_files(name: str) -> list[Path]:
    """The data files the example ``name`` is built from: float .tflite, int8 .tflite, inputs .npz --
    from :func:`data_dir` when there is one, else downloaded (:func:`.fetch.fetch`, once, into the cache)
    and the shipped inputs.  FileNotFoundError (a :class:`.fetch.FetchError` for a failed download)
    naming the first one missing and the fix."""
    from .fetch import fetch

    s, d = _spec(name), data_dir()
    if d is not None:
        files = [d / s.float_tflite, d / s.int8_tflite, d / s.inputs]
        if not files[2].is_file():
            files[2] = SHIPPED_INPUTS / s.inputs
        for f in files:
            if not f.is_file():
                raise FileNotFoundError(f"{f} not found (MLPerf Tiny model {name!r}); put it there, or unset "
                                        "TABULA_MLPERF_TINY to download it")
        return files
    return [fetch(s.float_tflite), fetch(s.int8_tflite), SHIPPED_INPUTS / s.inputs]


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
