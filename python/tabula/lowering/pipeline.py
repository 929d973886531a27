"""Lower a converted PT2E graph to the integer IR (:mod:`tabula.ir`).

The converted graph has the shape ``q -> dq -> op -> q -> dq -> op ...``: every float value between
two ops is a ``quantize_per_tensor``/``dequantize_per_tensor`` pair, and weights and biases are
integer constants behind ``dequantize_per_channel``.  Each (q, dq) pair becomes one IR tensor with
that pair's (scale, zero_point); each aten op is lowered by the module in ``lower/ops/`` that lists
it in ``ATEN`` (discovered by listing the folder, no hand-kept table), then the IR passes listed in
:data:`PASSES` run, then :func:`tabula.ir.verify`.

4-D activations are NCHW in PyTorch and NHWC in the IR; :class:`LoweringContext` converts shapes and
the op lowerings convert layouts where element order matters (e.g. flatten).
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Callable

import numpy as np
import torch
from torch.fx import GraphModule, Node

from .. import dtypes, rules
from ..errors import IRError, LoweringError, UnsupportedOpError
from ..fx import fake_value, is_dequantize, is_dequantize_per_channel, is_qdq, is_quantize, node_source
from ..ir import Graph, Op, Tensor, verify
from ..qmath import quantize_multiplier, quantize_multiplier_16
from . import ops as _ops_pkg
from .bound_accumulators_pass import bound_accumulators
from .ops.clamp import clamp_codes
from .simplify_layout_pass import simplify_layout

_TORCH_TO_IR = {torch.int8: "int8", torch.int16: "int16", torch.int32: "int32"}

#: IR passes run after node lowering, in order: ``(name, function(graph) -> None)``.
PASSES: list[tuple[str, Callable[[Graph], None]]] = [
    ("simplify_layout", simplify_layout),  # TRANSPOSE / RESHAPE chains that cancel removed, moved past elementwise ops
    ("bound_accumulators", bound_accumulators),  # every bias, accumulator and pool sum proven to fit
]


def _discover_lowerings() -> tuple[dict[str, Callable], dict[str, Callable]]:
    table: dict[str, Callable] = {}
    limits: dict[str, Callable] = {}
    for info in pkgutil.iter_modules(_ops_pkg.__path__):
        mod = importlib.import_module(f"{_ops_pkg.__name__}.{info.name}")
        limit = getattr(mod, "unsupported", None)
        if limit is not None and "dtype" not in inspect.signature(limit).parameters:
            limit = (lambda f: lambda node, dtype=None: f(node))(limit)
        for name in getattr(mod, "ATEN", ()):
            table[name] = mod.lower
            if limit is not None:
                limits[name] = limit
    return table, limits


#: aten op -> ``lower(ctx, node)``; and aten op -> ``unsupported(node, dtype=None) -> str | None``, the uses
#: of the op its lowering cannot handle, checked on the float graph before calibration (optional per
#: module; a module's ``unsupported(node)`` that does not depend on the dtype takes the node only).
LOWERINGS, LIMITS = _discover_lowerings()


def unsupported_reason(node: Node, dtype: str | None = None) -> str | None:
    """Why the lowering of a supported op cannot handle this use of the captured (float) aten node
    (e.g. "div by an activation", ``"with ceil_mode=True"``), judged before quantization; None when it can.
    ``dtype``: the scheme's activation IR dtype (``"int8"``, ``"int16"``) for the limits that depend on it
    (a softmax's row length); None when it is not known (those limits then take the strictest).
    :func:`tabula.quantizer.check_supported` lists these with the unsupported ops, up front."""
    limit = LIMITS.get(rules.canonical_op(node.target))
    return limit(node, dtype) if limit is not None else None


def supported_ops() -> list[str]:
    """The aten ops tabula quantizes and lowers: a rule in :mod:`tabula.rules` and a lowering here."""
    return sorted(n for n in rules.supported_ops() if n in LOWERINGS)


def nchw_to_nhwc_shape(shape) -> tuple[int, ...]:
    """``[N,C,H,W] -> (N,H,W,C)``; other ranks unchanged."""
    s = tuple(int(d) for d in shape)
    return (s[0], s[2], s[3], s[1]) if len(s) == 4 else s


class LoweringContext:
    """What an op lowering sees: the FX graph module, the IR graph being built, and helpers that
    map FX values to IR tensors."""

    def __init__(self, gm: GraphModule, graph: Graph):
        self.gm = gm
        self.graph = graph
        self._tensor_of: dict[Node, str] = {}  # q or dq node -> IR tensor name
        self._names: set[str] = set()
        #: fused activation node -> ``(tensor its producer wrote, min code, max code)`` of the CLAMP
        #: it still has to emit, or ``None`` when the producer's RESCALE already saturates to it
        self.fused: dict[Node, tuple[Tensor, int, int] | None] = {}
        self._const_of: dict[tuple, str] = {}  # (dtype, shape, scale, bytes) -> constant tensor name
        self._raw: dict[Node, str] = {}  # FX node of a mask / indices (never quantized) -> IR tensor name

    # -- naming ------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, i = base, 1
        while name in self.graph.tensors or name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._names.add(name)
        return name

    # -- activations ---------------------------------------------------------------------
    def _q_tensor(self, q: Node, base: str) -> str:
        """The IR tensor of a ``quantize_per_tensor`` node.  When the quantize reads a dequantize
        (a requantization PT2E inserts between two grids, e.g. before a fixed-domain input or a
        shared cat grid) a RESCALE from the source tensor is emitted."""
        if q in self._tensor_of:
            return self._tensor_of[q]
        src, scale, zp, qmin, qmax, dtype = q.args[:6]
        ir_dtype = _TORCH_TO_IR.get(dtype)
        if ir_dtype is None:
            raise LoweringError(f"{node_source(q)}: activation dtype {dtype} is not supported")
        val = fake_value(q)
        if val is None:
            raise LoweringError(f"{node_source(q)}: no shape information on {q.name}; capture with torch.export")
        shape = nchw_to_nhwc_shape(val.shape)
        lo, hi = dtypes.range_of(ir_dtype)
        qrange = None if (qmin, qmax) == (lo, hi) else (int(qmin), int(qmax))
        if ir_dtype == "int16" and int(zp) != 0:
            raise LoweringError(f"{node_source(q)}: int16 activations must be symmetric (zero point 0), got {zp}")
        if is_dequantize(src):
            source = self.input(src, q)
            if (source.dtype, float(source.scale), int(source.zero_point)) == (ir_dtype, float(scale), int(zp)) \
                    and not source.const:
                self._tensor_of[q] = source.name  # the same grid: nothing to compute
                return source.name
            t = Tensor(self.fresh(f"{source.name}_requant"), shape, ir_dtype, float(scale), int(zp), qrange=qrange)
            self.graph.add_tensor(t)
            self._tensor_of[q] = t.name
            self.rescale(source, t, node_source(q))
            return t.name
        t = Tensor(self.fresh(base), shape, ir_dtype, float(scale), int(zp), qrange=qrange)
        self.graph.add_tensor(t)
        self._tensor_of[q] = t.name
        return t.name

    def rescale(self, x: Tensor, out: Tensor, source: str, scale: float | None = None,
                in_scales=None) -> None:
        """Append a RESCALE ``x -> out`` (TOSA): real factor ``scale`` (default ``x.scale / out.scale``)
        or per channel ``in_scales[c] / out.scale``.  int48 inputs use a 16-bit multiplier.
        The output is clamped to its dtype (TOSA), not to a narrower ``qrange``: every consumer
        accepts the full dtype range (int16 code -32768 is just -32768*scale; a domain-limited
        TABLE maps int8 code -128 to f at the domain edge)."""
        scale32 = x.dtype != "int48"
        qm = quantize_multiplier if scale32 else quantize_multiplier_16
        if in_scales is not None:
            pairs = [qm(float(s) / float(out.scale)) for s in in_scales]
        else:
            pairs = [qm(float(scale) if scale is not None else float(x.scale) / float(out.scale))]
        if len(set(pairs)) == 1:
            pairs = pairs[:1]
        in_zp = int(x.zero_point) if x.dtype in ("int8", "int16") else 0
        self.graph.add_op(Op("RESCALE", [x.name], [out.name], {
            "input_zp": in_zp, "output_zp": int(out.zero_point),
            "multiplier": [m for m, _ in pairs], "shift": [s for _, s in pairs], "scale32": scale32,
        }, source))

    def input(self, arg: Node, user: Node) -> Tensor:
        """The IR tensor for an activation argument ``arg`` (a ``dequantize_per_tensor`` node), or
        the IR constant of a quantized constant (``dequantize_per_tensor`` of a ``get_attr``: PT2E
        folds ``quantize(buffer)``, e.g. a buffer concatenated with an activation), or a value that is
        never quantized: a boolean mask or integer indices an earlier op wrote (:meth:`raw_output`), or
        such a constant (:meth:`raw_const`)."""
        if isinstance(arg, Node) and arg in self._raw:
            return self.graph.tensors[self._raw[arg]]
        if isinstance(arg, Node) and arg.op == "get_attr" and not self._attr(arg).is_floating_point():
            return self.raw_const(arg, user)
        if not is_dequantize(arg):
            raise LoweringError(
                f"{node_source(user)}: input {getattr(arg, 'name', arg)!r} of {user.name} is not "
                "quantized (no dequantize_per_tensor before it); was the model quantized with tabula.quantize?"
            )
        q = arg.args[0]
        if isinstance(q, Node) and q.op == "get_attr":
            return self._quantized_const(arg, user)
        if not is_quantize(q):
            raise LoweringError(f"{node_source(user)}: expected quantize -> dequantize before {user.name}")
        return self.graph.tensors[self._q_tensor(q, q.args[0].name)]

    def output(self, node: Node) -> Tensor:
        """The IR tensor for the output of ``node`` (its single ``quantize_per_tensor`` user).

        A producer whose only user is a fused activation (:func:`tabula.rules.fused_activation`,
        no quantize between them) writes the activation's grid: this returns the activation's output
        tensor when its bounds are the dtype's ends (the RESCALE's saturation is the activation), else
        a temporary on that grid that the activation's CLAMP reads (:attr:`fused`)."""
        users = list(node.users)
        act = rules.fused_activation(node)
        if act is not None:
            return self._fused_output(node, act)
        if len(users) != 1 or not is_quantize(users[0]):
            raise LoweringError(
                f"{node_source(node)}: output of {node.name} must feed exactly one quantize_per_tensor "
                f"(has users {[u.name for u in users]})"
            )
        return self.graph.tensors[self._q_tensor(users[0], node.name)]

    def _fused_output(self, node: Node, act: Node) -> Tensor:
        out = self.output(act)
        cmin, cmax = clamp_codes(act, out)
        if (cmin, cmax) == dtypes.range_of(out.dtype):
            self.fused[act] = None
            return out
        pre = self.temp(f"{node.name}_{act.name}_in", out.shape, out.dtype, out.scale, out.zero_point)
        self.fused[act] = (pre, cmin, cmax)
        return pre

    def shared(self, node: Node) -> tuple[Tensor, Tensor]:
        """``(input, output)`` of a range-preserving op (``rules.SHARED``: the data input is
        ``node.args[0]``), which must share one grid -- LoweringError otherwise."""
        x, out = self.input(node.args[0], node), self.output(node)
        if (x.scale, x.zero_point) != (out.scale, out.zero_point):
            raise LoweringError(f"{node_source(node)}: {node.name} input and output qparams differ "
                                f"({x.scale}, {x.zero_point}) vs ({out.scale}, {out.zero_point}); quantize with tabula.quantize")
        return x, out

    def _quantized_const(self, dq: Node, user: Node) -> Tensor:
        """The IR constant of ``dequantize_per_tensor(get_attr)``: the integer data PT2E quantized,
        NCHW -> NHWC for 4-D, a 0-D scalar as shape ``(1,)``, with the dequantize's (scale, zero_point).  One constant per node."""
        if dq in self._tensor_of:
            return self.graph.tensors[self._tensor_of[dq]]
        data = self._attr(dq.args[0])
        scale, zp, dtype = dq.args[1], dq.args[2], dq.args[5]
        ir_dtype = _TORCH_TO_IR.get(dtype)
        if ir_dtype is None or data.dtype != dtype:
            raise LoweringError(f"{node_source(user)}: constant {dq.args[0].target} of {user.name} is {data.dtype}, "
                                f"not a quantized {dtype} tensor")
        values = data.numpy()
        if values.ndim == 4:
            values = values.transpose(0, 2, 3, 1)
        if values.ndim == 0:  # a quantized scalar (index_put's value): one element, as raw_const's
            values = values.reshape(1)
        t = Tensor(self.fresh(f"{user.name}_{dq.args[0].name}"), tuple(values.shape), ir_dtype, float(scale), int(zp))
        self.graph.add_tensor(t, values)
        self._tensor_of[dq] = t.name
        return t

    # -- masks and indices (never quantized) ---------------------------------------------------
    def raw_output(self, node: Node, dtype: str | None = None) -> Tensor:
        """The IR tensor of ``node``'s output when it is a mask (``int8`` 0 / 1: TOSA's bool) or integer
        indices (``int32``; PyTorch's int64) -- never quantized: scale 1, zero point 0, so a graph output
        of it reads as its integer values.  ``dtype`` defaults from the node's value (bool: int8, else
        int32).  4-D tensors are NHWC, as every IR activation."""
        val = fake_value(node)
        if val is None:
            raise LoweringError(f"{node_source(node)}: no shape information on {node.name}; capture with torch.export")
        if dtype is None:
            dtype = "int8" if val.dtype == torch.bool else "int32"
        t = Tensor(self.fresh(node.name), nchw_to_nhwc_shape(val.shape) if val.dim() else (1,), dtype, 1.0, 0)
        self.graph.add_tensor(t)
        self._raw[node] = t.name
        return t

    def raw_const(self, n: Node, user: Node) -> Tensor:
        """The IR constant of a boolean or integer ``get_attr`` (a constant mask: int8 0 / 1; integers:
        int32, LoweringError beyond it), NHWC for 4-D.  One constant per node."""
        if n in self._raw:
            return self.graph.tensors[self._raw[n]]
        v = self._attr(n)
        data = v.to(torch.int64).numpy()
        if data.ndim == 4:
            data = data.transpose(0, 2, 3, 1)
        if data.ndim == 0:
            data = data.reshape(1)
        dtype = "int8" if v.dtype == torch.bool else "int32"
        if dtype == "int32" and data.size and (data.min() < -2**31 or data.max() >= 2**31):
            raise LoweringError(f"{node_source(user)}: integer constant {n.target} of {user.name} leaves int32")
        t = Tensor(self.fresh(f"{user.name}_{n.name}"), tuple(data.shape), dtype, 1.0, 0)
        self.graph.add_tensor(t, data)
        self._raw[n] = t.name
        return t

    def unused_input(self, placeholder: Node) -> Tensor:
        """The IR tensor of a model input that nothing reads: it keeps its place in the input list
        (the caller passes every input) with the graph's activation dtype and a unit grid."""
        val = placeholder.meta.get("val")
        if val is None:
            raise LoweringError(f"input {placeholder.name}: no shape information; capture with torch.export")
        dtypes_seen = [q.args[5] for q in self.gm.graph.nodes if is_quantize(q)]
        ir_dtype = _TORCH_TO_IR.get(dtypes_seen[0], "int8") if dtypes_seen else "int8"
        t = Tensor(self.fresh(placeholder.name), nchw_to_nhwc_shape(val.shape), ir_dtype, 1.0, 0)
        return self.graph.add_tensor(t)

    # -- constants -----------------------------------------------------------------------
    def _attr(self, n: Node) -> torch.Tensor:
        if n.op != "get_attr":
            raise LoweringError(f"{n.name}: expected a constant (get_attr), got {n.op}")
        obj = self.gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        return obj.detach()

    def per_channel_const(self, arg: Node, user: Node, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(int data, float64 per-channel scales)`` of a weight/bias behind ``dequantize_per_channel``.
        Raises LoweringError if ``arg`` is not a folded per-channel quantized constant on ``axis``."""
        if not is_dequantize_per_channel(arg):
            raise LoweringError(f"{node_source(user)}: weight/bias of {user.name} is not a per-channel quantized constant")
        data, scale, zp, got = (self._attr(arg.args[0]), self._attr(arg.args[1]), self._attr(arg.args[2]), arg.args[3])
        if got != axis or bool((zp != 0).any()):
            raise LoweringError(f"{node_source(user)}: weights must be symmetric per-channel on axis {axis}")
        return data.numpy(), scale.to(torch.float64).numpy()

    def float_const(self, arg: Node, user: Node) -> np.ndarray:
        """A float constant (e.g. an unquantized bias) as float32 numpy."""
        if not isinstance(arg, Node) or arg.op != "get_attr":
            raise LoweringError(f"{node_source(user)}: expected a constant tensor for {user.name}, got {arg!r}")
        return self._attr(arg).to(torch.float32).numpy()

    def const(self, base: str, data: np.ndarray, dtype: str, scale=None) -> Tensor:
        """A constant tensor holding ``data`` as ``dtype``.  Identical constants (same dtype, shape,
        scale and values -- e.g. the weights of a module called several times) are stored once:
        the existing tensor is returned.  Passes that change a constant must copy it when other
        ops read it too."""
        t = Tensor(self.fresh(base), tuple(data.shape), dtype, scale, 0)
        arr = np.ascontiguousarray(data, dtype=t.np_dtype)
        lo, hi = dtypes.range_of(t.dtype)
        if arr.size and (np.asarray(data).min() < lo or np.asarray(data).max() > hi):
            raise LoweringError(f"constant {base}: values {np.asarray(data).min()}..{np.asarray(data).max()} do not fit "
                                f"{t.dtype}")
        key = (t.dtype, t.shape, repr(scale), arr.tobytes())
        if key in self._const_of:
            return self.graph.tensors[self._const_of[key]]
        self._const_of[key] = t.name
        return self.graph.add_tensor(t, arr)

    def temp(self, base: str, shape, dtype: str, scale=None, zero_point: int = 0) -> Tensor:
        t = Tensor(self.fresh(base), tuple(int(d) for d in shape), dtype, scale, zero_point)
        return self.graph.add_tensor(t)


def lower_graph(gm: GraphModule) -> Graph:
    """Lower a converted PT2E ``GraphModule`` to a verified IR :class:`Graph`.

    Graph inputs are the ``quantize_per_tensor`` of each placeholder (a placeholder nothing reads
    keeps its place with a unit grid); graph outputs the ``dequantize_per_tensor`` feeding the output
    node (a graph input may be one).  A ``dequantize_per_tensor`` of a ``get_attr`` (a constant PT2E
    quantized, e.g. a buffer concatenated) becomes an IR constant.
    Raises:
        UnsupportedOpError: listing every op with no lowering (with source lines).
        LoweringError: a node whose pattern or attributes cannot be lowered (names the node).
    """
    missing = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and not is_qdq(n):
            name = rules.canonical_op(n.target)
            if name not in LOWERINGS and name not in rules.IGNORED:
                missing.append((name, node_source(n)))
    if missing:
        raise UnsupportedOpError(missing, supported_ops())

    g = Graph()
    ctx = LoweringContext(gm, g)
    from ..progress import bar

    # int16 table ops search their plans here (seconds each): a bar over the ops, on a terminal
    work = [n for n in gm.graph.nodes if n.op == "call_function" and not is_qdq(n)]
    int16 = any(is_quantize(q) and q.args[5] == torch.int16 for q in gm.graph.nodes)
    with bar(len(work) if int16 else 0, "lowering (int16 table plans)", "op") as shown:
        _lower_nodes(gm, g, ctx, shown)
    for _, run_pass in PASSES:
        run_pass(g)
    try:
        verify(g)
    except IRError as e:
        raise LoweringError(f"lowering produced an invalid IR: {e}") from e
    return g


def _lower_nodes(gm: GraphModule, g: Graph, ctx: LoweringContext, shown) -> None:
    """Every node of ``gm`` in order: placeholders become graph inputs, aten ops their IR ops (``shown``
    advances per op), the output node the graph outputs."""
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            users = list(n.users)
            if not users:
                name = ctx.unused_input(n).name
            elif len(users) != 1 or not is_quantize(users[0]):
                raise LoweringError(f"input {n.name} feeds {[u.name for u in users]}, not one quantize_per_tensor: "
                                    "the device receives one integer tensor per input; quantize with tabula.quantize")
            else:
                name = ctx._q_tensor(users[0], n.name)
            g.inputs.append(name)
            g.io_layout[name] = "NCHW" if len(g.tensors[name].shape) == 4 else "plain"
        elif n.op == "call_function" and not is_qdq(n):
            name = rules.canonical_op(n.target)
            if name in rules.IGNORED:
                raise LoweringError(f"{node_source(n)}: {name} reached the lowering; quantize with tabula.quantize, "
                                    "which removes identity ops before annotating")
            LOWERINGS[name](ctx, n)
            shown.update()
        elif n.op == "output":
            for arg in torch.utils._pytree.tree_leaves(n.args[0]):
                t = ctx.input(arg, n)
                g.outputs.append(t.name)
                g.io_layout[t.name] = "NCHW" if len(t.shape) == 4 else "plain"
