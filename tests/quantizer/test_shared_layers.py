"""A module called several times (an unrolled recurrent cell) on inputs of different scales: each call
gets the bias scale of its own input (the lowering quantizes the float bias per call), the weights are
one constant in the IR and in model.c."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula.codegen import generate
from tabula.report import sqnr_db

STEPS = 8


class UnrolledCell(nn.Module):
    """h <- tanh(cell(h) + inp(x_t)) for 8 steps, one ``cell`` Linear shared by every step: the first
    step sees the input (about +-9), later ones tanh outputs (+-1) -- different input scales."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = x
        for _ in range(STEPS):
            h = torch.tanh(self.cell(h))
        return self.head(h)


@pytest.fixture(scope="module")
def cell():
    torch.manual_seed(0)
    m = UnrolledCell().eval()
    with torch.no_grad():
        m.cell.bias.mul_(4.0)  # a bias that matters: a wrong bias scale shows
    return m, torch.randn(64, 16) * 3


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_each_call_gets_its_own_bias_scale(cell, scheme, tmp_path):
    model, x = cell
    gm = tabula.quantize(model, (x[:1],), x, scheme=scheme)
    program = tabula.lower(gm)
    with torch.no_grad():
        ref = model(x).numpy()
        sim = np.concatenate([gm(x[i : i + 1]).numpy() for i in range(x.shape[0])])
    got = program.run(x.numpy())[0]
    # the lowered program is as good as PT2E's own simulation (before: 0.45 dB vs 40 dB in int8)
    assert sqnr_db(ref, got) > sqnr_db(ref, sim) - 0.5 and sqnr_db(ref, got) > (30 if scheme == "int8" else 40)
    g = program.graph
    fcs = [o for o in g.ops if o.op == "FULLY_CONNECTED"]
    assert len(fcs) == STEPS + 1
    weights = {o.inputs[1] for o in fcs}
    assert len(weights) == 2  # the cell's weights once, the head's once
    in_scales = [g.tensors[o.inputs[0]].scale for o in fcs[:STEPS]]
    assert len(set(in_scales)) == STEPS  # every call has its own input scale ...
    for o in fcs[:STEPS]:  # ... and its bias is at that call's s_in * s_w[c]
        s_in, w, b = g.tensors[o.inputs[0]].scale, g.tensors[o.inputs[1]], g.tensors[o.inputs[2]]
        np.testing.assert_allclose(b.scale, s_in * np.asarray(w.scale), rtol=1e-12)
        np.testing.assert_allclose(g.constants[b.name] * np.asarray(b.scale), model.cell.bias.detach().numpy(),
                                   atol=0.5 * max(b.scale) * 1.0001)
    # model.c holds the cell's weights once
    model_c = generate(g, tmp_path).model_c.read_text()
    arrays = re.findall(r"/\* (\w+) \[16, 16\] int8 \*/\nstatic const int8_t \1\[256\]", model_c)
    assert len(arrays) == 1, arrays
    calls = re.findall(r"tabula_fully_connected_s\d+\([^;]*\b" + arrays[0] + r"\b", model_c)
    assert len(calls) == STEPS  # every step's call reads the one array
