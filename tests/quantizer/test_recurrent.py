"""nn.LSTM / nn.GRU (quantizer/unroll_recurrent_pass.py): unrolled before quantization into ops of the
rules table, with every role of the cell on one grid over the steps and the weights stored once.

The unrolled float graph computes what PyTorch's module does (1-2 layers, batch_first either way, zero,
constant or given initial state, every output); the lowered program matches PT2E's simulation of the
quantized graph; what the pass cannot unroll is listed up front."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula import rules
from tabula.errors import UnsupportedOpError
from tabula.quantizer import capture, passes
from tabula.report import sqnr_db

# torch.export of nn.LSTM / nn.GRU warns about their _flat_weights attributes
pytestmark = pytest.mark.filterwarnings("ignore:The tensor attributes")


class Seq(nn.Module):
    """``rnn`` returning every output it has (y, h_n[, c_n]), with optional given / constant states."""

    def __init__(self, rnn, state: str = "zero"):
        super().__init__()
        self.rnn, self.state = rnn, state
        shape = (rnn.num_layers, 1, rnn.hidden_size)
        if state == "const":
            self.register_buffer("h0", torch.randn(shape) * 0.5)
            self.register_buffer("c0", torch.randn(shape) * 0.5)

    def forward(self, x, *given):
        lstm = isinstance(self.rnn, nn.LSTM)
        if self.state == "const":
            hx = (self.h0, self.c0) if lstm else self.h0
        elif self.state == "input":
            hx = tuple(given) if lstm else given[0]
        else:
            hx = None
        y, h = self.rnn(x, hx)
        return (y, *h) if lstm else (y, h)


def _unrolled(model, args):
    gm = capture(model.eval(), args)
    for _, run_pass in passes():
        run_pass(gm)
    return gm


CASES = [("lstm", 1, True, "zero"), ("lstm", 2, False, "const"), ("lstm", 2, True, "input"),
         ("gru", 2, True, "zero"), ("gru", 1, False, "const"), ("gru", 2, False, "input")]


@pytest.mark.parametrize("kind,layers,batch_first,state", CASES)
def test_unrolled_graph_computes_what_pytorch_does(kind, layers, batch_first, state):
    torch.manual_seed(1)
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    m = Seq(cls(3, 5, num_layers=layers, batch_first=batch_first), state)
    x = torch.randn(1, 4, 3) if batch_first else torch.randn(4, 1, 3)
    extra = tuple(torch.randn(layers, 1, 5) for _ in range(2 if kind == "lstm" else 1)) if state == "input" else ()
    gm = _unrolled(m, (x, *extra))
    names = {rules.canonical_op(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not names & {"aten.lstm", "aten.gru"}
    assert names <= set(rules.supported_ops()) | {"_operator.getitem"}, names
    with torch.no_grad():
        want = m(x, *extra)
        got = gm(x, *extra)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-6)
    # every step's linear reads one buffer per gate (weights stored once)
    weights = [n.args[1] for n in gm.graph.nodes if n.op == "call_function" and rules.canonical_op(n.target) == "aten.linear"]
    gates = 4 if kind == "lstm" else 3
    assert len({w.target for w in weights}) == gates * 2 * layers


def test_what_the_pass_cannot_unroll_is_listed_before_calibration():
    x = torch.randn(1, 4, 3)
    for rnn, why in [(nn.LSTM(3, 5, bidirectional=True, batch_first=True), "aten.lstm bidirectional"),
                     (nn.LSTM(3, 5, proj_size=2, batch_first=True), "aten.lstm with proj_size"),
                     (nn.GRU(3, 5, bidirectional=True, batch_first=True), "aten.gru bidirectional")]:
        with pytest.raises(UnsupportedOpError, match=why):
            tabula.quantize(Seq(rnn), (x,), [(x,)])


class Head(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn, self.fc = rnn, nn.Linear(rnn.hidden_size, 3)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


@pytest.mark.parametrize("kind,scheme", [("lstm", "int8"), ("gru", "a16w8")])
def test_quantized_cell_one_grid_per_role_over_the_steps(kind, scheme):
    """The program matches PT2E's simulation; the cell state c and h have one grid at every step; every
    step's ops read the same weights, biases and tables.  (Calibrated on the test inputs too: this checks
    the program, benchmarks/recurrent.py measures honest figures.)"""
    torch.manual_seed(0)
    steps = 5
    rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(4, 8, num_layers=1 if kind == "lstm" else 2, batch_first=True)
    m = Head(rnn).eval()
    x = torch.randn(16, steps, 4)
    gm = tabula.quantize(m, (x[:1],), x, scheme=scheme)
    program = tabula.lower(gm)
    g = program.graph
    with torch.no_grad():
        ref = m(x).numpy()
        sim = np.concatenate([gm(x[i : i + 1]).numpy() for i in range(len(x))])
    got = program.run(x.numpy())[0]
    assert sqnr_db(ref, got) >= sqnr_db(ref, sim) - 0.3
    assert sqnr_db(ref, got) > (30 if scheme == "int8" else 45)
    # h: the MUL (LSTM: o * tanh(c)) or ADD/SUB (GRU) at the end of each step writes one grid
    fcs = [o for o in g.ops if o.op == "FULLY_CONNECTED"]
    gates = 4 if kind == "lstm" else 3
    layers = rnn.num_layers
    assert len({o.inputs[1] for o in fcs}) == gates * 2 * layers + 1  # per gate: W_ih, W_hh; the head
    hh_inputs = {float(g.tensors[o.inputs[0]].scale) for o in fcs if g.tensors[o.inputs[1]].shape[1] == 8}
    assert len(hh_inputs) <= layers + 1  # h of each layer (and layer 1's input, h of layer 0) on one grid
    tables = [o for o in g.ops if o.op == "TABLE" and "function" in o.attrs]
    assert len({(o.attrs["function"], float(g.tensors[o.inputs[0]].scale)) for o in tables}) <= (5 if kind == "lstm" else 6) * layers
    assert len({o.inputs[1] for o in tables}) <= (5 if kind == "lstm" else 6) * layers  # one table per role
