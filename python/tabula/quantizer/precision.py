"""Precision per layer: which activation grids are int8 and which int16 (``scheme="mixed"``).

A *layer* here is a set of graph nodes whose activations must share one dtype, derived from the
op classes of :mod:`tabula.rules` only (no op is named here):

* an op that makes its own grid from any input dtype -- ``WEIGHTED`` (CONV2D / FULLY_CONNECTED
  accumulate int8 or int16 inputs and RESCALE to either), ``ARITHMETIC``, ``MATMUL`` (each input is
  RESCALEd to int32 first), ``JOINING`` (every input is RESCALEd onto the cat's grid) -- and a model
  input (placeholder) each *own* a layer;
* an op whose output dtype is its input's -- ``TABLE`` (int8 -> int8 with 256 entries, int16 ->
  int16 through 513), ``FIXED_OUTPUT`` (the softmax program), ``SHARED`` (pools, data movement,
  relu / clamp: the producer's grid itself, so also every fused activation) -- joins the layer of its
  data input;
* the steps of an unrolled LSTM / GRU (:mod:`tabula.quantizer.unroll_recurrent_pass`) are one
  program: the layers of one role (a gate's pre-activation, c, h: one grid over the steps,
  :data:`tabula.rules.STEP_GRID_KEY`) at every step are one layer.

So a layer is its owner's output grid plus what is computed on that dtype after it; the dtype changes
only where an owner RESCALEs: the producer's own output RESCALE writes int16 from an int8 input (int32
accumulator) or int8 from an int16 one (int48), as TOSA RESCALE does both.  Nothing is inserted at a
boundary except where a cat joins inputs of another dtype (its RESCALE per input, as on any grid).

The quantizer gives every node the qspecs of its layer's scheme (:class:`PrecisionMap`); weighted,
arithmetic and matmul inputs take their *producer's* dtype, so PT2E's implicit sharing keeps one
grid per tensor (no requantization).  A layer is named by its owner node (``conv2d_3``, ``x``) and
by the module that owner came from (``features.3``, ``classifier``), which is what per-module
overrides match (:func:`resolve_overrides`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from torch.fx import GraphModule, Node

from .. import rules

__all__ = ["Layer", "layers", "layer_of", "module_path", "resolve_overrides", "PrecisionMap", "PRECISIONS"]

#: The schemes a layer can take (activation dtype int8 or int16; weights int8 in both).
PRECISIONS = ("int8", "a16w8")

#: Op classes whose nodes own a layer (make their own grid from any input dtype).
_OWNERS = frozenset({rules.OpClass.WEIGHTED, rules.OpClass.ARITHMETIC, rules.OpClass.MATMUL, rules.OpClass.JOINING})


def module_path(node: Node) -> str:
    """The fully qualified name of the module ``node`` was traced from (``features.3``), from its
    ``nn_module_stack``; ``""`` for the model's own forward (or a graph without the stack)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, _ = list(stack.values())[-1]
    return str(path)


def _data_input(node: Node) -> Node | None:
    name = rules.canonical_op(node.target)
    cls = rules.op_class(node.target)
    i = rules.SHARED[name] if cls is rules.OpClass.SHARED else 0
    a = node.args[i] if len(node.args) > i else None
    return a if isinstance(a, Node) and a.op != "get_attr" else None


def layer_of(gm: GraphModule) -> dict[Node, Node]:
    """Every placeholder and supported ``call_function`` node of ``gm`` -> the owner node of its layer
    (module docstring).  Nodes without a rule (getitem, asserts) are left out."""
    owner: dict[Node, Node] = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            owner[n] = n
            continue
        if n.op != "call_function":
            continue
        cls = rules.op_class(n.target)
        if cls is None:
            continue
        if cls in _OWNERS:
            owner[n] = n
            continue
        src = _data_input(n)
        owner[n] = owner.get(src, n) if src is not None else n
    return _join_step_grids(owner)


def _join_step_grids(owner: dict[Node, Node]) -> dict[Node, Node]:
    """``owner`` with the layers of an unrolled recurrence's steps joined: every node of one role (one
    :data:`tabula.rules.STEP_GRID_KEY`: a gate, c, h) has one grid over the steps, so one dtype; the
    layers holding them become one, named by its first owner in graph order."""
    order = {n: i for i, n in enumerate(owner)}
    parent: dict[Node, Node] = {}

    def find(o: Node) -> Node:
        while parent.get(o, o) is not o:
            o = parent[o]
        return o

    first: dict[str, Node] = {}
    for n, o in owner.items():
        key = n.meta.get(rules.STEP_GRID_KEY)
        if key is None:
            continue
        a, b = find(first.setdefault(key, o)), find(o)
        if a is not b:
            a, b = (a, b) if order[a] < order[b] else (b, a)
            parent[b] = a
    return {n: find(o) for n, o in owner.items()} if parent else owner


@dataclass
class Layer:
    """One precision decision: the owner node's name (``conv2d_3``; a model input's placeholder name),
    its op (``aten.conv2d``, ``input``), module path (``features.3``; ``""`` at the top level), the
    names of every node computed on its dtype (owner first) and of the nodes that read it (its
    consumers, outside the layer)."""

    name: str
    op: str
    module: str
    nodes: list[str] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``features.3 conv2d_3`` (or the node name alone at the top level)."""
        return f"{self.module} {self.name}" if self.module else self.name


def layers(gm: GraphModule) -> list[Layer]:
    """The layers of ``gm`` (a captured float graph, or a prepared / converted one: q/dq nodes are
    looked through) in graph order.  A model input that nothing reads is left out."""
    owner = layer_of(gm)
    out: dict[Node, Layer] = {}
    for n, o in owner.items():
        if o not in out:
            op = "input" if o.op == "placeholder" else rules.canonical_op(o.target)
            out[o] = Layer(o.name, op, module_path(o))
        out[o].nodes.append(n.name)
    for n, o in owner.items():
        for u in _real_users(n):
            if owner.get(u) is not o and u.name not in out[o].consumers:
                out[o].consumers.append(u.name)
    return [lay for o, lay in out.items() if lay.consumers or o.op != "placeholder"]


def _real_users(n: Node) -> list[Node]:
    """Users of ``n`` through q/dq nodes (a prepared or converted graph) and observers."""
    from ..fx import is_qdq

    seen, todo, out = set(), list(n.users), []
    while todo:
        u = todo.pop(0)
        if u in seen:
            continue
        seen.add(u)
        if is_qdq(u) or (u.op == "call_module"):
            todo.extend(u.users)
        elif u.op == "call_function":
            out.append(u)
    return out


def _matches(key: str, lay: Layer) -> bool:
    """``key`` names ``lay``: its owner node's name, its module path, or a module above it
    (``features`` matches ``features.3``)."""
    if key == lay.name:
        return True
    m = lay.module
    return bool(m) and (m == key or m.startswith(key + "."))


def resolve_overrides(all_layers: list[Layer], precision: dict[str, str] | None) -> dict[str, str]:
    """Layer name -> scheme forced by the user's ``precision`` (``{"classifier": "a16w8", "conv2d_1":
    "int8"}``: keys are module paths -- a module names every layer under it -- or layer owner node
    names; values ``"int8"`` or ``"a16w8"``).  A more specific key (longer module path, or a node
    name) wins over a module above it.

    Raises:
        ValueError: an unknown value, or a key that names no layer (the message lists the layers).
    """
    forced: dict[str, tuple[int, str]] = {}
    for key, value in (precision or {}).items():
        if value not in PRECISIONS:
            raise ValueError(f"precision[{key!r}] = {value!r}: choose {' or '.join(PRECISIONS)}")
        hit = [lay for lay in all_layers if _matches(key, lay)]
        if not hit:
            names = ", ".join(lay.label for lay in all_layers)
            raise ValueError(f"precision key {key!r} names no layer (module path or node name); the layers are {names}")
        for lay in hit:
            rank = 10**6 if key == lay.name else len(key)
            if lay.name not in forced or rank >= forced[lay.name][0]:
                forced[lay.name] = (rank, value)
    return {k: v for k, (_, v) in forced.items()}


class PrecisionMap:
    """Which scheme each node's grids take: ``choice`` (layer owner name -> ``"int8"`` /
    ``"a16w8"``), ``default`` for layers it does not name.  Built on the graph the quantizer annotates
    (:meth:`bind`); :meth:`scheme_of` then answers for any node of it."""

    def __init__(self, choice: dict[str, str] | None = None, default: str = "int8"):
        for k, v in (choice or {}).items():
            if v not in PRECISIONS:
                raise ValueError(f"precision of layer {k!r} is {v!r}: choose {' or '.join(PRECISIONS)}")
        if default not in PRECISIONS:
            raise ValueError(f"default precision {default!r}: choose {' or '.join(PRECISIONS)}")
        self.choice = dict(choice or {})
        self.default = default
        self._owner: dict[Node, Node] = {}

    def bind(self, gm: GraphModule) -> "PrecisionMap":
        """Compute the layers of ``gm`` (the graph about to be annotated).  A choice naming no layer
        of it: ValueError listing the layers."""
        self._owner = layer_of(gm)
        names = {o.name for o in self._owner.values()}
        unknown = sorted(set(self.choice) - names)
        if unknown:
            raise ValueError(f"precision names {', '.join(unknown)}, which are not layers of this graph "
                             f"(its layers: {', '.join(sorted(names))})")
        return self

    def scheme_of(self, node) -> str:
        """The scheme of ``node``'s layer (a node of the bound graph; anything else: the default)."""
        o = self._owner.get(node) if isinstance(node, Node) else None
        return self.choice.get(o.name, self.default) if o is not None else self.default
