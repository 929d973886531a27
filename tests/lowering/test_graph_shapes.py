"""Graph shapes a new user's model takes, each of which stopped the chain before: a model input that
feeds a cat and another op, an input nothing reads, an output that is an input, the identity model,
several inputs through the Python API -- and error lines that name the user's code (their line, or
for an ``nn.Sequential`` the module path), never torch's own files."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula.errors import UnsupportedOpError

SCHEMES = ["int8", "a16w8"]


def _quantize(model, shapes, scheme="int8", n=16):
    torch.manual_seed(0)
    calib = [tuple(torch.randn(*s) for s in shapes) for _ in range(n)]
    gm = tabula.quantize(model.eval(), calib[0], calib, scheme=scheme)
    return gm, tabula.lower(gm)


def _max_lsb(program, gm, xs) -> float:
    with torch.no_grad():
        want = gm(*xs)
    want = want if isinstance(want, (tuple, list)) else (want,)
    got = program.run(*xs)
    assert len(got) == len(want)
    return max(float(np.abs(g - w.numpy()).max() / qp.scale) for g, w, qp in zip(got, want, program.output_qparams))


class _InputToCatAndConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.cat([self.conv(x), x], dim=1)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_input_feeding_a_cat_and_a_conv(scheme):
    """LoweringError "input x must feed exactly one quantize_per_tensor" before: the input now has
    its own grid (one integer tensor on the device) and the cat reads it through a RESCALE when the
    cat's grid differs."""
    gm, program = _quantize(_InputToCatAndConv(), [(1, 3, 5, 5)], scheme)
    assert len(program.graph.inputs) == 1
    ops = [o.op for o in program.graph.ops]
    assert ops[0] == "CONV2D" and ops[-1] == "CONCAT"
    x = torch.randn(1, 3, 5, 5)
    assert _max_lsb(program, gm, (x,)) <= 1.001


class _CatOfOneValueTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        z = torch.tanh(y)
        return torch.cat([y, z, y, y[:, :2]], dim=1)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_cat_joining_one_value_twice(scheme):
    """RecursionError in torchao's prepare before: the annotator made the repeated input edge share
    with itself (cat([y, y]): one edge, SharedQuantizationSpec((y, cat)) pointing at its own spec)."""
    gm, program = _quantize(_CatOfOneValueTwice(), [(1, 4)], scheme)
    assert program.graph.ops[-1].op == "CONCAT"
    x = torch.randn(1, 4)
    assert _max_lsb(program, gm, (x,)) <= 1.001


class _UnusedInput(nn.Module):
    def forward(self, x, y):
        return torch.relu(x) * 2


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_input_nothing_reads_keeps_its_place(scheme):
    """LoweringError "input y must feed exactly one quantize_per_tensor" before."""
    gm, program = _quantize(_UnusedInput(), [(1, 6), (2, 3)], scheme)
    assert len(program.input_qparams) == 2
    assert program.graph.tensors[program.graph.inputs[1]].shape == (2, 3)
    x, y = torch.randn(1, 6), torch.randn(2, 3)
    assert _max_lsb(program, gm, (x, y)) <= 1.001
    with pytest.raises(ValueError, match="2 input"):
        program.run(x)


class _InputIsAnOutput(nn.Module):
    def forward(self, x):
        return x, torch.tanh(x)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_output_that_is_an_input(scheme):
    gm, program = _quantize(_InputIsAnOutput(), [(1, 8)], scheme)
    g = program.graph
    assert g.outputs[0] == g.inputs[0]
    x = torch.randn(1, 8)
    assert _max_lsb(program, gm, (x,)) <= 1.001
    # the first output is the quantized input itself
    np.testing.assert_array_equal(program.run(x)[0], program.dequantize_outputs(program.quantize_inputs(x))[0])


class _Identity(nn.Module):
    def forward(self, x):
        return x


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_identity_model(scheme):
    gm, program = _quantize(_Identity(), [(1, 3, 4, 4)], scheme)
    assert program.graph.ops == [] and program.graph.outputs == program.graph.inputs
    x = torch.randn(1, 3, 4, 4)
    assert _max_lsb(program, gm, (x,)) == 0.0
    (q,) = program.quantize_inputs(x)
    np.testing.assert_array_equal(program.run_int(q)[0], q)


@pytest.mark.host
def test_the_identity_model_builds_and_runs_on_host(tmp_path):
    """A program with no ops: the generated C is an empty run function; the device echoes the input."""
    import json

    from helpers import scons

    torch.manual_seed(0)
    x = torch.randn(8, 2, 3, 3)
    torch.export.save(torch.export.export(_Identity(), (x[:1],)), tmp_path / "ident.pt2")
    np.savez(tmp_path / "data.npz", x=x.numpy())
    scons("board=host", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'ident.pt2'}",
          f"calib={tmp_path / 'data.npz'}", f"data={tmp_path / 'data.npz'}")
    r = json.loads((tmp_path / "b" / "host" / "ident" / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
    assert r["sqnr_db_vs_float"] > 35
    assert "outputs" not in r  # a single-output report keeps its form


class _TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x, gate):
        return self.conv(x) * torch.sigmoid(gate) + x  # gate [1, 3, 1, 1]: squeeze-excite style


@pytest.mark.parametrize("scheme", SCHEMES)
def test_several_inputs_through_the_python_api(scheme):
    gm, program = _quantize(_TwoInputs(), [(1, 3, 4, 4), (1, 3, 1, 1)], scheme)
    assert [program.graph.tensors[n].shape for n in program.graph.inputs] == [(1, 4, 4, 3), (1, 1, 1, 3)]
    xs = (torch.randn(4, 3, 4, 4), torch.randn(4, 3, 1, 1))  # a batch of 4: run one sample at a time
    out = program.run(*xs)[0]
    assert out.shape == (4, 3, 4, 4)
    for i in range(4):
        assert _max_lsb(program, gm, (xs[0][i : i + 1], xs[1][i : i + 1])) <= 1.001


# -- error lines -------------------------------------------------------------------------------
def test_unsupported_op_in_a_sequential_names_the_module_path():
    """No user forward: the list names ``2.1 (Hardshrink)`` from the node's nn_module_stack, not
    torch's ``activation.py:<line>``."""
    seq = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Sequential(nn.Conv2d(8, 8, 3), nn.Hardshrink()))
    with pytest.raises(UnsupportedOpError) as ei:
        tabula.quantize(seq, (torch.randn(1, 3, 8, 8),), torch.randn(2, 3, 8, 8))
    assert ei.value.ops == [("aten.hardshrink", "2.1 (Hardshrink) node hardshrink")]
    assert ".py:" not in str(ei.value)


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Hardshrink())

    def forward(self, x):
        return self.features(x).flatten(1)  # the line the error must name


def test_unsupported_op_inside_a_torch_module_names_the_users_line():
    with pytest.raises(UnsupportedOpError) as ei:
        tabula.quantize(_Block(), (torch.randn(1, 3, 6, 6),), torch.randn(2, 3, 6, 6))
    ((name, src),) = ei.value.ops
    line = next(i for i, ln in enumerate(open(__file__).read().splitlines(), 1) if "the line the error must name" in ln)
    assert name == "aten.hardshrink" and src == f"test_graph_shapes.py:{line} node hardshrink"


def test_node_source_skips_frames_of_torch_but_not_a_users_torch_folder():
    from torch.fx import Graph

    from tabula.fx import node_source

    g = Graph()
    n = g.placeholder("x")
    n.meta["stack_trace"] = (
        '  File "/home/me/torch/model.py", line 12, in forward\n    y = self.conv(x)\n'
        f'  File "{torch.__file__.rsplit("/", 1)[0]}/nn/modules/conv.py", line 565, in forward\n'
        "    return self._conv_forward(input, self.weight, self.bias)\n")
    assert node_source(n) == "model.py:12 node x"
    n.meta["stack_trace"] = f'  File "{torch.__file__.rsplit("/", 1)[0]}/nn/modules/conv.py", line 565, in forward\n'
    n.meta["nn_module_stack"] = {"L__self__": ("", "torch.nn.modules.container.Sequential"),
                                 "L__self__features.3": ("features.3", "torch.nn.modules.conv.Conv2d")}
    assert node_source(n) == "features.3 (Conv2d) node x"
    n.meta["nn_module_stack"] = {}
    assert node_source(n) == "node x"
