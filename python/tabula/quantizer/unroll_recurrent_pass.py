"""Unroll ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (``aten.lstm.input`` / ``aten.gru.input`` /
``aten.rnn_tanh.input`` / ``aten.rnn_relu.input``, as ``torch.export`` gives them) over their fixed sequence
length into ops of the rules table, before quantization.

Each step of each layer becomes, per gate ``k`` (LSTM ``i f g o``, GRU ``r z n``, RNN ``h``: PyTorch's row
blocks of ``weight_ih`` / ``weight_hh``)::

    z_k = linear(x_t, W_ih[k], b_ih[k] + b_hh[k]) + linear(h, W_hh[k])      (GRU n: see below)
    LSTM:  i, f, o = sigmoid(z_i, z_f, z_o);  g = tanh(z_g)
           c = f * c + i * g;  h = o * tanh(c)
    GRU:   r, z = sigmoid(z_r, z_z);  n = tanh(linear(x_t, W_in, b_in) + r * linear(h, W_hn, b_hn))
           h = n + z * (h - n)
    RNN:   h = tanh(z_h) (``nonlinearity="tanh"``) or relu(z_h) (``"relu"``: fused into the add / linear
           before it, the CLAMP in its epilogue)

(PyTorch's equations, ``torch.nn.LSTM`` / ``torch.nn.GRU`` / ``torch.nn.RNN`` documentation; ``(1 - z) * n + z * h`` is
written ``n + z * (h - n)``: one op fewer, the same real value.)  ``x_t`` is ``slice`` + ``view`` of the
input along the time dim (1 with ``batch_first``, else 0); layer ``l > 0`` reads layer ``l - 1``'s ``h``
of the same step.  Every gate's weight rows are one buffer (``<module>_w_ih_l<l>_<gate>``) that every
step's ``linear`` reads: the lowering stores each once (:meth:`tabula.lowering.pipeline.LoweringContext.const`)
and each step's ``FULLY_CONNECTED`` reads it.

The initial state (``hx``): a constant (zeros by default; :mod:`.fold_constants_pass` has folded
``torch.zeros``) costs nothing -- zero terms are dropped, a nonzero constant ``h0`` goes into the
first step's biases (``W_hh h0``; batch 1) or is added as a constant, ``c0`` multiplies as a constant;
a state computed by the model or given as an input is an activation like any other.

**Grids over the steps.**  Every node this pass creates carries ``meta[rules.STEP_GRID_KEY]`` =
``"<lstm node>.l<layer>.<role>"`` (role: ``z_i``, ``i``, ``c``, ``h``, ...); the annotator gives all
nodes with one key one output grid (:meth:`tabula.quantizer.annotator.TabulaQuantizer._share_step_grids`),
observed over every step.  So the cell state ``c`` and ``h`` are on one grid at every step -- no
requantization between steps, no per-step grid that the next step's inputs drift from -- and every
step's ops are the same integer program (the same weights, biases, multipliers and tables: stored once).

The outputs: ``output[:, t]`` (``select`` on the time dim: ``y[:, -1]``) is that step's ``h`` directly
(no copy); any other use of ``output`` reads ``cat`` of every step's ``h`` on the time dim (on the ``h``
grid: a plain copy); ``h_n`` / ``c_n`` are the last step's states (``cat`` over the layers when there
are several; ``h_n[-1]`` is the last layer's ``h``).

Refused (listed before calibration, :func:`unsupported`): bidirectional, ``proj_size``, training
mode with dropout, packed sequences (``aten.lstm.data``), inputs other than 3-D.
"""
from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg

from .. import rules
from ..fx import arg, canonical_op, fake_value

__all__ = ["RECURRENT_OPS", "GATES", "unsupported", "unroll_recurrent"]

aten = torch.ops.aten

#: The recurrent ops this pass unrolls: aten name -> (gates in PyTorch's row-block order, their
#: nonlinearity: an aten op of :data:`tabula.rules.TABLE`).
GATES: dict[str, tuple[tuple[str, str], ...]] = {
    "aten.lstm": (("i", "aten.sigmoid"), ("f", "aten.sigmoid"), ("g", "aten.tanh"), ("o", "aten.sigmoid")),
    "aten.gru": (("r", "aten.sigmoid"), ("z", "aten.sigmoid"), ("n", "aten.tanh")),
    "aten.rnn_tanh": (("h", "aten.tanh"),),
    "aten.rnn_relu": (("h", "aten.relu"),),
}
RECURRENT_OPS = tuple(GATES)

_ACT = {"aten.sigmoid": aten.sigmoid.default, "aten.tanh": aten.tanh.default, "aten.relu": aten.relu.default}
_COPY_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn")


def _parts(node: Node) -> dict:
    """The arguments of ``lstm.input`` / ``gru.input``: input, hx, params, has_biases, num_layers,
    dropout, train, bidirectional, batch_first."""
    a = list(node.args)
    keys = ["input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional", "batch_first"]
    return {k: (a[i] if i < len(a) else node.kwargs.get(k)) for i, k in enumerate(keys)}


def unsupported(node: Node) -> str | None:
    """Why the captured recurrent ``node`` (``aten.lstm`` / ``aten.gru`` / ``aten.rnn_*``) cannot be unrolled, or None;
    :func:`tabula.quantizer.annotator.check_supported` lists it before calibration."""
    name = canonical_op(node.target)
    if getattr(node.target, "_overloadname", "input") != "input":
        return "on a packed sequence (give a padded [B, T, C] tensor of fixed length)"
    p = _parts(node)
    if p["bidirectional"]:
        return "bidirectional (tabula unrolls one direction; run a second layer on the flipped sequence)"
    if p["train"] and float(p["dropout"] or 0.0) > 0.0:
        return "in training mode with dropout (call model.eval() before torch.export)"
    x = fake_value(p["input"])
    if x is None or x.dim() != 3:
        return f"on a {None if x is None else x.dim()}-D input (give it [B, T, C] or [T, B, C])"
    layers, has_bias = int(p["num_layers"]), bool(p["has_biases"])
    params = list(p["params"])
    per_layer = 4 if has_bias else 2
    if len(params) != layers * per_layer:
        return "with proj_size (projected hidden state) or an unexpected parameter list"
    if any(not isinstance(w, Node) or w.op != "get_attr" for w in params):
        return "whose weights are not constants"
    gates = len(GATES[name])
    w_hh = fake_value(params[1])
    if w_hh is None or w_hh.dim() != 2 or w_hh.shape[0] != gates * w_hh.shape[1]:
        return "with proj_size (projected hidden state)"
    return None


class _Builder:
    """Emits nodes before ``anchor`` with the anchor's source metadata and a FakeTensor value each."""

    def __init__(self, gm: GraphModule, anchor: Node, prefix: str):
        self.gm, self.g, self.anchor, self.prefix = gm, gm.graph, anchor, prefix
        self.mode = fake_value(_parts(anchor)["input"]).fake_mode
        self.meta = {k: anchor.meta[k] for k in _COPY_META if k in anchor.meta}

    def const(self, name: str, value: torch.Tensor) -> Node:
        base, i = f"{self.prefix}_{name}".replace(".", "_"), 0
        attr = base
        while hasattr(self.gm, attr):
            i += 1
            attr = f"{base}_{i}"
        self.gm.register_buffer(attr, value.detach().clone().contiguous().to(torch.float32))
        with self.g.inserting_before(self.anchor):
            n = self.g.get_attr(attr)
        n.meta["val"] = self.mode.from_tensor(getattr(self.gm, attr), static_shapes=True)
        return n

    def call(self, target, args: tuple, grid: str | None = None) -> Node:
        with self.g.inserting_before(self.anchor):
            n = self.g.call_function(target, args)
        n.meta.update(self.meta)
        with self.mode:
            n.meta["val"] = target(*map_arg(args, lambda a: a.meta["val"]))
        if grid is not None:
            n.meta[rules.STEP_GRID_KEY] = f"{self.anchor.name}.{grid}"
        return n


def _value(gm: GraphModule, n: Node) -> torch.Tensor:
    obj = gm
    for part in str(n.target).split("."):
        obj = getattr(obj, part)
    return obj.detach().to(torch.float32)


class _State:
    """One state tensor of one layer ``[B, H]``: zero, a constant, or an activation node."""

    def __init__(self, node: Node | None = None, const: torch.Tensor | None = None):
        self.node, self.const = node, const

    @property
    def zero(self) -> bool:
        return self.node is None and (self.const is None or not bool(self.const.any()))


def _initial(b: _Builder, gm: GraphModule, hx, layer: int, layers: int) -> _State:
    """Layer ``layer``'s part ``[B, H]`` of an initial state ``hx`` ``[layers, B, H]``."""
    if hx is None:
        return _State()
    if hx.op == "get_attr":
        return _State(const=_value(gm, hx)[layer])
    v = fake_value(hx)
    part = hx if layers == 1 else b.call(aten.slice.Tensor, (hx, 0, layer, layer + 1))
    return _State(node=b.call(aten.view.default, (part, list(v.shape[1:]))))


def _step_inputs(b: _Builder, x: Node, batch_first: bool) -> list[Node]:
    """``x[:, t]`` (``batch_first``) or ``x[t]`` for every step t, each ``[B, C]`` (slice + view)."""
    v = fake_value(x)
    tdim = 1 if batch_first else 0
    steps, batch, feat = int(v.shape[tdim]), int(v.shape[1 - tdim]), int(v.shape[2])
    out = []
    for t in range(steps):
        s = b.call(aten.slice.Tensor, (x, tdim, t, t + 1))
        out.append(b.call(aten.view.default, (s, [batch, feat])))
    return out


def _gate_pre(b: _Builder, x_t: Node, h: _State, w_ih: Node, w_hh: Node, bias: torch.Tensor, w_hh_value, role: str) -> Node:
    """``linear(x_t, W_ih, bias) + linear(h, W_hh)`` on grid ``z_<role>``; a constant ``h`` folds into
    the bias (batch 1) or is added as a constant; a zero ``h`` drops the second term."""
    if h.zero:
        return b.call(aten.linear.default, (x_t, w_ih, b.const(f"b_{role}", bias)), f"z_{role}")
    if h.node is None:
        proj = h.const @ w_hh_value.T  # [B, H]: W_hh h0
        if proj.shape[0] == 1:
            return b.call(aten.linear.default, (x_t, w_ih, b.const(f"b0_{role}", bias + proj[0])), f"z_{role}")
        xa = b.call(aten.linear.default, (x_t, w_ih, b.const(f"b_{role}", bias)), f"xa0_{role}")
        return b.call(aten.add.Tensor, (xa, b.const(f"h0_{role}", proj)), f"z_{role}")
    xa = b.call(aten.linear.default, (x_t, w_ih, b.const(f"b_{role}", bias)), f"xa_{role}")
    ha = b.call(aten.linear.default, (h.node, w_hh), f"ha_{role}")
    return b.call(aten.add.Tensor, (xa, ha), f"z_{role}")


def _mul_state(b: _Builder, a: Node, s: _State, grid: str) -> Node:
    """``a * s`` for a nonzero state ``s`` (constant or activation)."""
    other = s.node if s.node is not None else b.const(f"{grid}_const", s.const)
    return b.call(aten.mul.Tensor, (a, other), grid)


def _layer(b: _Builder, gm: GraphModule, name: str, xs: list[Node], weights: list[Node], has_bias: bool,
           h: _State, c: _State | None, layer: int) -> tuple[list[Node], Node, Node | None]:
    """Unroll one layer over the steps ``xs``; returns (every step's h, the last h, the last c)."""
    gates = GATES[name]
    w_ih, w_hh = _value(gm, weights[0]), _value(gm, weights[1])
    hidden = w_hh.shape[1]
    b_ih = _value(gm, weights[2]) if has_bias else torch.zeros(len(gates) * hidden)
    b_hh = _value(gm, weights[3]) if has_bias else torch.zeros(len(gates) * hidden)
    rows = {g: slice(k * hidden, (k + 1) * hidden) for k, (g, _) in enumerate(gates)}
    wi = {g: b.const(f"w_ih_l{layer}_{g}", w_ih[r]) for g, r in rows.items()}
    wh = {g: b.const(f"w_hh_l{layer}_{g}", w_hh[r]) for g, r in rows.items()}
    act = dict(gates)
    hs = []
    for x_t in xs:
        role = lambda s: f"l{layer}.{s}"  # noqa: E731
        a = {}
        for g, _ in gates:
            if name == "aten.gru" and g == "n":
                continue
            pre = _gate_pre(b, x_t, h, wi[g], wh[g], b_ih[rows[g]] + b_hh[rows[g]], w_hh[rows[g]], role(g))
            a[g] = b.call(_ACT[act[g]], (pre,), role(g))
        if name == "aten.lstm":
            ig = b.call(aten.mul.Tensor, (a["i"], a["g"]), role("c" if c.zero else "ig"))
            if not c.zero:
                fc = _mul_state(b, a["f"], c, role("fc"))
                ig = b.call(aten.add.Tensor, (fc, ig), role("c"))
            c = _State(node=ig)
            tc = b.call(aten.tanh.default, (ig,), role("tc"))
            h = _State(node=b.call(aten.mul.Tensor, (a["o"], tc), role("h")))
        elif name != "aten.gru":  # an RNN: h is the gate
            h = _State(node=a["h"])
        else:
            r = rows["n"]
            xn = b.call(aten.linear.default, (x_t, wi["n"], b.const(f"b_in_l{layer}", b_ih[r])), role("xn"))
            if h.node is not None:
                hn = b.call(aten.linear.default, (h.node, wh["n"], b.const(f"b_hn_l{layer}", b_hh[r])), role("hn"))
                rn = b.call(aten.mul.Tensor, (a["r"], hn), role("rn"))
            else:  # a constant h: W_hn h0 + b_hn is a constant
                hn0 = b_hh[r] if h.zero else h.const @ w_hh[r].T + b_hh[r]
                rn = b.call(aten.mul.Tensor, (a["r"], b.const(f"hn0_l{layer}", hn0)), role("rn0"))
            n = b.call(aten.tanh.default, (b.call(aten.add.Tensor, (xn, rn), role("np")),), role("n"))
            if h.zero:  # h = n - z n
                zn = b.call(aten.mul.Tensor, (a["z"], n), role("zn0"))
                hn_ = b.call(aten.sub.Tensor, (n, zn), role("h"))
            else:
                d = (b.call(aten.sub.Tensor, (h.node, n), role("d")) if h.node is not None
                     else b.call(aten.rsub.Tensor, (n, b.const(f"h0_l{layer}", h.const)), role("d0")))
                zd = b.call(aten.mul.Tensor, (a["z"], d), role("zd" if h.node is not None else "zd0"))
                hn_ = b.call(aten.add.Tensor, (n, zd), role("h"))
            h = _State(node=hn_)
        hs.append(h.node)
    return hs, h.node, (c.node if c is not None else None)


def _getitems(node: Node) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {}
    for u in node.users:
        if u.op == "call_function" and u.target is operator.getitem:
            out.setdefault(int(u.args[1]), []).append(u)
    return out


def _replace_output(b: _Builder, item: Node, hs: list[Node], batch_first: bool) -> None:
    """Rewire the users of ``output`` (``[B, T, H]`` or ``[T, B, H]``): a ``select`` of one step on the time
    dim reads that step's h; anything else reads the ``cat`` of every step's h (on the h grid)."""
    tdim = 1 if batch_first else 0
    steps = len(hs)
    for u in list(item.users):
        if (u.op == "call_function" and canonical_op(u.target) == "aten.select" and u.args[0] is item
                and int(arg(u, 1, "dim", 0)) % 3 == tdim and isinstance(arg(u, 2, "index", None), int)):
            u.replace_all_uses_with(hs[int(u.args[2]) % steps])
            b.g.erase_node(u)
    if not item.users:
        return
    v = fake_value(hs[0])
    batch, hidden = int(v.shape[0]), int(v.shape[1])
    grid = hs[0].meta[rules.STEP_GRID_KEY].split(".", 1)[1]
    shape = [batch, 1, hidden] if batch_first else [1, batch, hidden]
    parts = [b.call(aten.view.default, (h, shape)) for h in hs]
    y = parts[0] if steps == 1 else b.call(aten.cat.default, (parts, tdim), grid)
    item.replace_all_uses_with(y)


def _replace_state(b: _Builder, item: Node, last: list[Node]) -> None:
    """Rewire the users of ``h_n`` / ``c_n`` (``[layers, B, H]``): ``h_n[l]`` reads layer l's last state;
    anything else the ``cat`` of every layer's (one view for one layer)."""
    for u in list(item.users):
        if (u.op == "call_function" and canonical_op(u.target) == "aten.select" and u.args[0] is item
                and int(arg(u, 1, "dim", 0)) % 3 == 0 and isinstance(arg(u, 2, "index", None), int)):
            u.replace_all_uses_with(last[int(u.args[2]) % len(last)])
            b.g.erase_node(u)
    if not item.users:
        return
    parts = [b.call(aten.view.default, (s, [1, *fake_value(s).shape])) for s in last]
    item.replace_all_uses_with(parts[0] if len(parts) == 1 else b.call(aten.cat.default, (parts, 0)))


def unroll_recurrent(gm: GraphModule) -> int:
    """Unroll every supported recurrent node (:data:`GATES`) of ``gm`` in place (see the module
    docstring); a node :func:`unsupported` refuses is left for the quantizer's check to list.
    Returns how many were unrolled."""
    done = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or canonical_op(node.target) not in GATES or unsupported(node) is not None:
            continue
        name = canonical_op(node.target)
        p = _parts(node)
        b = _Builder(gm, node, node.name)
        layers, has_bias, batch_first = int(p["num_layers"]), bool(p["has_biases"]), bool(p["batch_first"])
        per = 4 if has_bias else 2
        hx = list(p["hx"]) if name == "aten.lstm" else [p["hx"]]  # GRU / RNN: one state
        xs = _step_inputs(b, p["input"], batch_first)
        last_h, last_c = [], []
        for layer in range(layers):
            h = _initial(b, gm, hx[0], layer, layers)
            c = _initial(b, gm, hx[1], layer, layers) if name == "aten.lstm" else None
            xs, h_last, c_last = _layer(b, gm, name, xs, p["params"][layer * per:(layer + 1) * per], has_bias, h, c,
                                        layer)
            last_h.append(h_last)
            last_c.append(c_last)
        items = _getitems(node)
        for item in items.get(0, []):
            _replace_output(b, item, xs, batch_first)
        for item in items.get(1, []):
            _replace_state(b, item, last_h)
        for item in items.get(2, []):
            _replace_state(b, item, last_c)
        for item in [i for its in items.values() for i in its]:
            if not item.users:
                gm.graph.erase_node(item)
        if not node.users:
            gm.graph.erase_node(node)
        done += 1
    if done:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return done
