"""Estimated instructions per inference of a float graph's ops in int8 or int16, for the mixed scheme.

One linear model per op kind and activation dtype (as data, :data:`COSTS`), over features read from the
graph's shapes: ``instructions = a * MACs + b * outputs + c * pixel_taps + d * elements`` where
``pixel_taps`` is output pixels x kernel taps (the patch gathers of a convolution) and ``elements`` the
elements an elementwise op, pool or copy touches.  The Cortex-M55 (Helium) coefficients are fitted to
the per-op instruction counts of kws, ResNet-8 and the MobileNet example by ``benchmarks/fit_costs.py``
(``scons board=corstone300 example=kws|ic|mobilenet scheme=int8|a16w8 profile=1``, a non-negative least-squares
fit per kind and dtype; 2026-12-06, with the a16w8 Helium conv / depthwise paths of 32-bit accumulators:
every build's total within 7 %);
the Cortex-M4 (DSP) and portable ones come from README's per-MAC figures ("Speed per layer",
``benchmarks/dsp_m4.py``).  A weighted or arithmetic op whose output dtype differs from its input's
(a precision boundary) adds :data:`BOUNDARY` per output where the RESCALE after the accumulator is a
separate kernel, nothing where the kernel fuses it (:data:`FUSED_BOUNDARY`).

The mixed scheme compares configurations with these estimates; the instructions it reports for a build
are the device's (QEMU ``-icount``).
"""
from __future__ import annotations

import functools
import math
from typing import Callable

from torch.fx import GraphModule, Node

from .. import rules
from .precision import layer_of

__all__ = ["COSTS", "BOUNDARY", "FUSED_BOUNDARY", "isa_of", "node_features", "cost_model"]

#: ISA -> (kind, activation dtype) -> (per MAC, per output, per pixel tap, per element).
COSTS: dict[str, dict[tuple[str, str], tuple[float, float, float, float]]] = {
    "helium": {  # benchmarks/fit_costs.py, 2026-12-06: kws, ic, mobilenet x int8, a16w8 (totals within 7 %)
        ("conv", "int8"): (0.182, 2.9, 12.2, 0.0), ("conv", "int16"): (0.408, 2.4, 22.0, 0.0),
        ("depthwise", "int8"): (1.774, 0.0, 0.0, 0.0), ("depthwise", "int16"): (1.792, 0.0, 0.0, 0.0),
        ("linear", "int8"): (0.852, 0.0, 0.0, 0.0), ("linear", "int16"): (0.985, 13.2, 0.0, 0.0),
        ("matmul", "int8"): (5.0, 20.0, 0.0, 0.0), ("matmul", "int16"): (6.0, 40.0, 0.0, 0.0),
        ("add", "int8"): (0, 0, 0, 34.0), ("add", "int16"): (0, 0, 0, 58.1),
        ("arith", "int8"): (0, 0, 0, 40.0), ("arith", "int16"): (0, 0, 0, 60.0),
        ("table", "int8"): (0, 0, 0, 5.0), ("table", "int16"): (0, 0, 0, 40.0),
        ("softmax", "int8"): (0, 0, 0, 105.7), ("softmax", "int16"): (0, 0, 0, 152.2),
        ("pool", "int8"): (0, 0, 0, 1.8), ("pool", "int16"): (0, 0, 0, 6.5),
        ("copy", "int8"): (0, 0, 0, 1.0), ("copy", "int16"): (0, 0, 0, 1.5),
    },
    "dsp": {
        ("conv", "int8"): (1.50, 25.0, 0.0, 0.0), ("conv", "int16"): (2.35, 62.0, 0.0, 0.0),
        ("depthwise", "int8"): (6.06, 0.0, 0.0, 0.0), ("depthwise", "int16"): (10.06, 0.0, 0.0, 0.0),
        ("linear", "int8"): (1.64, 20.0, 0.0, 0.0), ("linear", "int16"): (2.01, 60.0, 0.0, 0.0),
        ("matmul", "int8"): (6.0, 20.0, 0.0, 0.0), ("matmul", "int16"): (8.0, 40.0, 0.0, 0.0),
        ("add", "int8"): (0, 0, 0, 34.6), ("add", "int16"): (0, 0, 0, 67.0),
        ("arith", "int8"): (0, 0, 0, 40.0), ("arith", "int16"): (0, 0, 0, 60.0),
        ("table", "int8"): (0, 0, 0, 6.0), ("table", "int16"): (0, 0, 0, 40.0),
        ("softmax", "int8"): (0, 0, 0, 110.0), ("softmax", "int16"): (0, 0, 0, 160.0),
        ("pool", "int8"): (0, 0, 0, 7.0), ("pool", "int16"): (0, 0, 0, 7.0),
        ("copy", "int8"): (0, 0, 0, 1.5), ("copy", "int16"): (0, 0, 0, 2.0),
    },
    "portable": {
        ("conv", "int8"): (6.5, 30.0, 0.0, 0.0), ("conv", "int16"): (10.5, 75.0, 0.0, 0.0),
        ("depthwise", "int8"): (14.4, 0.0, 0.0, 0.0), ("depthwise", "int16"): (17.55, 0.0, 0.0, 0.0),
        ("linear", "int8"): (5.2, 20.0, 0.0, 0.0), ("linear", "int16"): (8.25, 60.0, 0.0, 0.0),
        ("matmul", "int8"): (6.0, 20.0, 0.0, 0.0), ("matmul", "int16"): (8.0, 40.0, 0.0, 0.0),
        ("add", "int8"): (0, 0, 0, 37.0), ("add", "int16"): (0, 0, 0, 70.0),
        ("arith", "int8"): (0, 0, 0, 40.0), ("arith", "int16"): (0, 0, 0, 60.0),
        ("table", "int8"): (0, 0, 0, 5.0), ("table", "int16"): (0, 0, 0, 40.0),
        ("softmax", "int8"): (0, 0, 0, 100.0), ("softmax", "int16"): (0, 0, 0, 150.0),
        ("pool", "int8"): (0, 0, 0, 6.2), ("pool", "int16"): (0, 0, 0, 6.2),
        ("copy", "int8"): (0, 0, 0, 1.0), ("copy", "int16"): (0, 0, 0, 1.5),
    },
}

#: Instructions per output of a precision boundary the kernels do not fuse: the accumulator op writes its
#: int32 / int48 tensor and a RESCALE kernel converts it (its CLAMP fused: ``tabula_rescale[_clamp]_<in>_<out>``),
#: per ISA.  Measured 2026-12-06: the RESCALE int48 -> int8 / int32 -> int16 + CLAMP alone M55 Helium 4.8 / 4.2,
#: M55 portable 28.7 / 23.7, M4 (DSP) 30.7 / 25.6 per output (``benchmarks/layers.py``); with the accumulator-
#: writing path, int8 -> int16 convs on the M55 (``profile=1``): kws's last pointwise 6.5, ResNet-8's 3x3 convs
#: 9.3 and 12.3 per output.
BOUNDARY = {"helium": 10.0, "dsp": 32.0, "portable": 30.0}

#: (op kind, input dtype) whose kernels take a boundary into their epilogue, so that it costs what the layer
#: costs in its input's dtype -- ``tabula_depthwise_conv2d_s16_s8`` (kws's first depthwise int16 -> int8 220,141
#: instructions against 229 K in a16w8), ``tabula_conv2d_s16_s8`` (int48 -> int8 in the epilogue of the int16
#: conv) -- or, an ADD, in int16 wherever an input or the output is int16 (``tabula_add_requant_<a>_<b>_<out>``,
#: one kernel for any int8 / int16 mix: 49-55 per element on ResNet-8's mixes against 34 / 58 all int8 /
#: int16).  int8 -> int16 fuses only where every shift is 33 or more (``fuse_requant``), which an int16
#: output's finer grid seldom gives: charged :data:`BOUNDARY`.
FUSED_BOUNDARY = frozenset({("depthwise", "int16"), ("conv", "int16"), ("add", "int8"), ("add", "int16")})

#: Ops that only move or view data.
_FREE = frozenset({"aten.view", "aten.reshape", "aten.flatten", "aten.unsqueeze", "aten.squeeze"})
_POOLS = frozenset({"aten.max_pool2d", "aten.avg_pool2d", "aten.adaptive_avg_pool2d", "aten.mean", "aten.max_pool1d",
                    "aten.avg_pool1d"})


def isa_of(board: str) -> str:
    """``"helium"``, ``"dsp"`` or ``"portable"``: an ISA name itself, or a board's (its board.toml
    ``cpu``: Cortex-M55 Helium, M4 / M7 / M33 DSP, anything else portable).  Raises ValueError for an
    unknown board (:func:`tabula.boards.load_board`)."""
    if board in COSTS:
        return board
    from ..boards import load_board

    cpu = load_board(board).cpu.lower()
    if "m55" in cpu or "m85" in cpu:
        return "helium"
    if any(c in cpu for c in ("m4", "m7", "m33", "m35")):
        return "dsp"
    return "portable"


def _numel(v) -> int:
    shape = getattr(v, "shape", None)
    return int(math.prod(int(d) for d in shape)) if shape is not None else 0


def node_features(node: Node, gm: GraphModule) -> tuple[str, tuple[float, float, float, float]] | None:
    """``(kind, (MACs, outputs, pixel_taps, elements))`` of a float-graph node, or None for a node that
    costs nothing on the device (views, reshapes, unsupported)."""
    cls = rules.op_class(node.target) if node.op == "call_function" else None
    if cls is None:
        return None
    name = rules.canonical_op(node.target)
    out = node.meta.get("val")
    n_out = _numel(out)
    if cls is rules.OpClass.WEIGHTED:
        _, iw, _ = rules.WEIGHTED[name]
        w = node.args[iw]
        if not (isinstance(w, Node) and w.op == "get_attr"):
            return None
        wt = functools.reduce(getattr, str(w.target).split("."), gm)
        wshape = tuple(int(d) for d in wt.shape)
        if name == "aten.linear":
            return "linear", (n_out * wshape[1], n_out, 0.0, 0.0)
        taps = math.prod(wshape[2:]) if len(wshape) > 2 else 1
        macs = n_out * wshape[1] * taps
        groups = int(node.args[6]) if len(node.args) > 6 else int(node.kwargs.get("groups", 1))
        x = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
        cin = int(x.shape[1]) if x is not None and len(x.shape) > 1 else wshape[1]
        pixels = n_out / max(wshape[0], 1)
        if groups > 1 and groups == cin:
            return "depthwise", (macs, n_out, pixels * taps, 0.0)
        return "conv", (macs, n_out, pixels * taps, 0.0)
    if cls is rules.OpClass.MATMUL:
        a = node.args[0].meta.get("val") if isinstance(node.args[0], Node) else None
        k = int(a.shape[-1]) if a is not None else 1
        return "matmul", (n_out * k, n_out, 0.0, 0.0)
    if cls is rules.OpClass.TABLE:
        return "table", (0.0, 0.0, 0.0, n_out)
    if cls is rules.OpClass.FIXED_OUTPUT:
        return "softmax", (0.0, 0.0, 0.0, n_out)
    if cls is rules.OpClass.ARITHMETIC:
        acts = [a for a in node.args[:2] if isinstance(a, Node) and a.op != "get_attr"]
        return ("add" if len(acts) == 2 and name in ("aten.add", "aten.sub") else "arith"), (0.0, 0.0, 0.0, n_out)
    if name in _FREE:
        return None
    if name in _POOLS:
        x = node.args[0]
        return "pool", (0.0, 0.0, 0.0, _numel(x.meta.get("val")) if isinstance(x, Node) else n_out)
    if name in rules.FUSED_ACTIVATIONS and rules.fused_activation(node.args[0]) is node:
        return None  # in its producer's epilogue
    return "copy", (0.0, 0.0, 0.0, n_out)


_OWNING = frozenset({rules.OpClass.WEIGHTED, rules.OpClass.ARITHMETIC, rules.OpClass.MATMUL})


def cost_model(gm: GraphModule, board: str = "corstone300") -> Callable[[dict], tuple[float, dict[str, float]]]:
    """``cost(precision) -> (total, per_layer)``: estimated instructions per inference of ``gm`` (the float
    graph) when each layer (owner node name, :mod:`tabula.quantizer.precision`) has the scheme
    ``precision[name]`` (``"int8"`` / ``"a16w8"``; missing: int8).  ``per_layer`` charges each op to the
    layer whose dtype decides its kernel: a weighted, arithmetic or matmul op to its input's layer (its
    kernel reads that dtype), every other op to its own layer, and a boundary RESCALE to the layer it
    writes."""
    isa = isa_of(board)
    coeffs = COSTS[isa]
    owner = layer_of(gm)
    items = []
    for n in gm.graph.nodes:
        feat = node_features(n, gm)
        if feat is None or n not in owner:
            continue
        kind, f = feat
        cls = rules.op_class(n.target)
        src = n.args[0] if n.args and isinstance(n.args[0], Node) else None
        if cls in _OWNING and src is not None and src in owner:
            reader = owner[src].name
        else:
            reader = owner[n].name
        # an ADD of int8 and int16 inputs, or to an int16 output (tabula_add_requant_<a>_<b>_<out>), costs about
        # what int16 does: ResNet-8's residual s8 + s16 -> s16 54.6 instructions per element (int8 34, int16 58)
        wide = ()
        if kind == "add":
            wide = (*(owner[a].name for a in n.args if isinstance(a, Node) and a in owner), owner[n].name)
        items.append((kind, f, reader, owner[n].name, cls in _OWNING, wide))

    def dt(p: dict, layer: str) -> str:
        return "int16" if p.get(layer, "int8") == "a16w8" else "int8"

    def cost(p: dict) -> tuple[float, dict[str, float]]:
        per: dict[str, float] = {}
        for kind, f, reader, own, owning, wide in items:
            d_in = dt(p, reader)
            d_op = "int16" if any(dt(p, w) == "int16" for w in wide) else d_in
            a, b, c, e = coeffs[(kind, d_op)]
            v = a * f[0] + b * f[1] + c * f[2] + e * f[3]
            per[reader] = per.get(reader, 0.0) + v
            if owning and dt(p, own) != d_in and (kind, d_in) not in FUSED_BOUNDARY:
                per[own] = per.get(own, 0.0) + BOUNDARY[isa] * f[1 if f[1] else 3]
        return float(sum(per.values())), per

    return cost
