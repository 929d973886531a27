"""What the NPU tests share: the models, quantized once per session (``npu_model(name, scheme)``), and the
fixture that builds a firmware for an NPU plan with the test-only driver stand-in.

Models: ``digits`` (the session's digits program), ``attention`` (tests/fixtures/attention_model: its
a16w8 MATMUL is int16, which the Ethos-U55 cannot run), ``softmax_classifier`` (a 10-class softmax head),
``mobilenet`` (examples/mobilenet: MobileNetV1 0.25, 96x96, 8 calibration images)."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from helpers import ROOT, load_example

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))


@pytest.fixture(scope="session")
def npu_model(request):
    """``npu_model(name, scheme="int8")`` -> (tabula.Program in the CPU form, float test samples [k, ...])."""
    import tabula

    cache: dict = {}

    def get(name: str, scheme: str = "int8"):
        key = (name, scheme)
        if key in cache:
            return cache[key]
        if name == "digits" and scheme == "int8":  # the session's digits program (trained only when asked for)
            x = np.load(request.getfixturevalue("digits_dir") / "test.npz")["x"][:3].astype(np.float32)
            cache[key] = request.getfixturevalue("digits_program"), x
            return cache[key]
        torch.manual_seed(0)
        if name == "attention":
            from attention_model import TinyAttention

            model, x = TinyAttention().eval(), torch.randn(34, 6, 8)
        elif name == "softmax_classifier":
            from softmax_classifier import SoftmaxClassifier

            model = SoftmaxClassifier().eval()
            with torch.no_grad():
                model.fc2.weight.mul_(4.0)
            x = torch.randn(34, 16)
        elif name == "mobilenet":
            mobilenet = load_example("examples/mobilenet/model.py")  # by file: examples/digits has a model.py too

            model, x = mobilenet.build(), torch.cat([mobilenet.images(8, 2), mobilenet.images(2, 3)])
        else:
            raise KeyError(name)
        calib = x[:-2]
        gm = tabula.quantize(model, (calib[:1],), [(c[None],) for c in calib], scheme=scheme)
        cache[key] = tabula.lower(gm), x[-2:].numpy()
        return cache[key]

    return get
