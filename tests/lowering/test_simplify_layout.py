"""The layout pass (tabula.lowering.simplify_layout_pass): TRANSPOSE / RESHAPE chains that cancel are gone,
the rest merged, chains moved past elementwise ops -- and the integer program's outputs are bit for bit
those of the graph before the pass, on random inputs through the reference (Conv1d stacks with fused ReLU,
relu6's CLAMP, a tanh TABLE, a residual ADD, a pool, a graph output in NCL; int8 and a16w8; hand-built
graphs for shared tensors, graph outputs and a move that would not pay)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import tabula
from tabula.codegen.fusion import fuse_all
from tabula.ir import Graph, Op, Tensor, verify
from tabula.lowering import pipeline
from tabula.lowering.simplify_layout_pass import simplify_layout, transpose_bytes
from tabula.reference.interpreter import run_graph


class _Stack(nn.Module):
    """Conv1d layers joined by ``kind``: "relu" (fused into the conv), "relu6" (a CLAMP), "tanh" (a TABLE),
    "residual" (conv + input, then relu), "pool" / "avgpool" (MaxPool1d / AvgPool1d between), "out" (the last conv is an NCL graph output)."""

    def __init__(self, kind: str, c: int = 12):
        super().__init__()
        self.kind = kind
        self.a, self.b, self.c = nn.Conv1d(5, c, 3, padding=1), nn.Conv1d(c, c, 3, padding=1), nn.Conv1d(c, 6, 1)
        self.fc = nn.Linear(6 * (8 if kind == "avgpool" else 16), 4)

    def _act(self, y):
        return {"relu": torch.relu, "relu6": F.relu6, "tanh": torch.tanh}.get(self.kind, torch.relu)(y)

    def forward(self, x):
        y = self._act(self.a(x))
        if self.kind == "residual":
            y = torch.relu(self.b(y) + y)
        elif self.kind == "pool":
            y = F.max_pool1d(self._act(self.b(y)), 3, stride=1, padding=1)
        elif self.kind == "avgpool":  # stride 2: the pool changes L (the linear sees 6 x 8)
            y = F.avg_pool1d(self._act(self.b(y)), 3, stride=2, padding=1)
        else:
            y = self._act(self.b(y))
        y = self.c(y)
        if self.kind == "out":
            return y
        return self.fc(torch.relu(y).flatten(1))


def _graphs(model, scheme, monkeypatch):
    """``(before, after)``: the model's IR lowered without and with the layout pass."""
    torch.manual_seed(0)
    x = torch.randn(16, 5, 16)
    gm = tabula.quantize(model.eval(), (x[:1],), x, scheme=scheme)
    after = tabula.lower(gm, (x[:1],)).graph
    with monkeypatch.context() as m:
        m.setattr(pipeline, "PASSES", [p for p in pipeline.PASSES if p[0] != "simplify_layout"])
        before = tabula.lower(gm, (x[:1],)).graph
    return before, after


def _same_outputs(a: Graph, b: Graph, n: int = 6, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    assert a.inputs == b.inputs and a.outputs == b.outputs
    for _ in range(n):
        xs = []
        for name in a.inputs:
            t = a.tensors[name]
            lo, hi = (-128, 127) if t.dtype == "int8" else (-32768, 32767)
            xs.append(rng.integers(lo, hi, t.shape, endpoint=True).astype(t.np_dtype))
        for ya, yb in zip(run_graph(a, xs), run_graph(b, xs)):
            assert ya.dtype == yb.dtype and np.array_equal(ya, yb)


def _count(g: Graph, op: str) -> int:
    return sum(o.op == op for o in g.ops)


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
@pytest.mark.parametrize("kind", ["relu", "relu6", "tanh", "residual", "pool", "avgpool", "out"])
def test_conv1d_stack_keeps_nhwc_between_convs_bit_exact(kind, scheme, monkeypatch):
    before, after = _graphs(_Stack(kind), scheme, monkeypatch)
    _same_outputs(before, after)
    assert transpose_bytes(after) < transpose_bytes(before)
    convs = [i for i, o in enumerate(after.ops) if o.op == "CONV2D"]
    # between two convs nothing but elementwise ops and pools: no TRANSPOSE
    assert all(after.ops[j].op != "TRANSPOSE" for j in range(convs[0], convs[-1]))
    # the input's TRANSPOSE to NLC, and one before the flatten (or the NCL graph output), are all that is left
    assert _count(after, "TRANSPOSE") <= 2
    # a group's tensor names (an int16 tanh: codegen fuses it into one TABLE16) follow the moves
    for o in after.ops:
        assert all(o.attrs[k] in after.tensors for k in ("input", "output") if k in o.attrs)
        assert all(n in after.tensors for n in o.attrs.get("internal", []))
    fused = [[o.op for o in fuse_all(g).ops] for g in (before, after)]
    assert fused[0].count("TABLE16") == fused[1].count("TABLE16") and fused[1].count("TRANSPOSE") <= fused[0].count("TRANSPOSE")
    if kind == "out":
        (out,) = after.outputs
        assert after.tensors[out].shape == before.tensors[out].shape == (1, 6, 16)


def test_conv1d_relu_is_fused_into_the_conv():
    """The ReLU after a Conv1d is its output grid (rules.FUSING_PRODUCERS): no CLAMP, no code below 0."""
    torch.manual_seed(0)
    x = torch.randn(16, 5, 16)
    model = _Stack("relu").eval()
    g = tabula.lower(tabula.quantize(model, (x[:1],), x), (x[:1],)).graph
    assert _count(g, "CLAMP") == 0
    for o in g.ops:
        if o.op == "RESCALE" and g.ops[g.ops.index(o) - 1].op == "CONV2D":
            assert g.tensors[o.outputs[0]].zero_point == -128


# -- hand-built graphs ----------------------------------------------------------------------------------
def _t(g, name, shape, dtype="int8"):
    return g.add_tensor(Tensor(name, shape, dtype, 0.1, 0))


def _pair_graph(shared: bool, output_inside: bool) -> Graph:
    """x [1,4,6] -T-> [1,6,4] -CLAMP-> -T-> [1,4,6] -TABLE-> y; optionally the middle tensor also a graph
    output / read by a second op."""
    g = Graph()
    _t(g, "x", (1, 4, 6))
    _t(g, "a", (1, 6, 4))
    _t(g, "b", (1, 6, 4))
    _t(g, "c", (1, 4, 6))
    _t(g, "y", (1, 4, 6))
    g.add_tensor(Tensor("tab", (256,), "int8"), np.arange(-128, 128, dtype=np.int8)[::-1].copy())
    g.ops = [Op("TRANSPOSE", ["x"], ["a"], {"perms": [0, 2, 1]}), Op("CLAMP", ["a"], ["b"], {"min": -20, "max": 90}),
             Op("TRANSPOSE", ["b"], ["c"], {"perms": [0, 2, 1]}), Op("TABLE", ["c", "tab"], ["y"], {})]
    g.inputs, g.outputs = ["x"], ["y"]
    if shared:
        _t(g, "z", (1, 6, 4))
        g.ops.append(Op("CLAMP", ["a"], ["z"], {"min": 0, "max": 10}))
        g.outputs.append("z")
    if output_inside:
        g.outputs.append("b")
    verify(g)
    return g


@pytest.mark.parametrize("shared, output_inside", [(False, False), (True, False), (False, True)],
                         ids=["alone", "shared_input", "middle_is_output"])
def test_transpose_pair_around_clamp(shared, output_inside):
    g = _pair_graph(shared, output_inside)
    h = copy.deepcopy(g)
    simplify_layout(h)
    verify(h)
    _same_outputs(g, h)
    if not shared and not output_inside:
        assert _count(h, "TRANSPOSE") == 0
    else:  # the shared / output tensor keeps its layout: nothing gained, the graph is left as it was
        assert transpose_bytes(h) <= transpose_bytes(g)
        assert {n: h.tensors[n].shape for n in h.outputs} == {n: g.tensors[n].shape for n in g.outputs}


def test_merges_consecutive_transposes_and_drops_identity_reshapes():
    g = Graph()
    _t(g, "x", (2, 3, 4, 5))
    _t(g, "a", (2, 4, 3, 5))
    _t(g, "b", (5, 4, 3, 2))
    _t(g, "r", (5, 4, 6))
    _t(g, "r2", (5, 4, 3, 2))
    _t(g, "y", (5, 4, 3, 2))
    g.ops = [Op("TRANSPOSE", ["x"], ["a"], {"perms": [0, 2, 1, 3]}), Op("TRANSPOSE", ["a"], ["b"], {"perms": [3, 1, 2, 0]}),
             Op("RESHAPE", ["b"], ["r"], {"shape": [5, 4, 6]}), Op("RESHAPE", ["r"], ["r2"], {"shape": [5, 4, 3, 2]}),
             Op("CLAMP", ["r2"], ["y"], {"min": -3, "max": 3})]
    g.inputs, g.outputs = ["x"], ["y"]
    verify(g)
    h = copy.deepcopy(g)
    simplify_layout(h)
    verify(h)
    _same_outputs(g, h)
    assert sorted(o.op for o in h.ops) == ["CLAMP", "TRANSPOSE"]  # one TRANSPOSE (it may follow the CLAMP)
    assert transpose_bytes(h) == transpose_bytes(g) // 2


def test_a_move_that_does_not_pay_is_not_kept():
    """ADD of a transposed tensor and a plain one: moving the TRANSPOSE past the int8 -> int32 RESCALE would
    transpose four times the bytes; the pass leaves the graph as it was."""
    g = Graph()
    _t(g, "x", (1, 4, 6))
    _t(g, "p", (1, 6, 4))
    _t(g, "a", (1, 6, 4))
    _t(g, "ai", (1, 6, 4), "int32")
    _t(g, "pi", (1, 6, 4), "int32")
    _t(g, "s", (1, 6, 4), "int32")
    g.ops = [Op("TRANSPOSE", ["x"], ["a"], {"perms": [0, 2, 1]}),
             Op("RESCALE", ["a"], ["ai"], {"input_zp": 0, "output_zp": 0, "multiplier": [1 << 30], "shift": [20],
                                           "scale32": True}),
             Op("RESCALE", ["p"], ["pi"], {"input_zp": 0, "output_zp": 0, "multiplier": [1 << 30], "shift": [20],
                                           "scale32": True}),
             Op("ADD", ["ai", "pi"], ["s"], {})]
    g.inputs, g.outputs = ["x", "p"], ["s"]
    verify(g)
    h = copy.deepcopy(g)
    simplify_layout(h)
    assert [o.op for o in h.ops] == [o.op for o in g.ops] and h.ops[1].inputs == ["a"]
