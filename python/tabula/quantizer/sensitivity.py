"""Per-layer sensitivity: PT2E's own simulation of any mix of int8 and int16 layers, from two real
quantizations.

PT2E's converted graph computes the model in float with a quantize -> dequantize pair on every grid
(and weights dequantized from their int8 codes): the integer program's arithmetic up to rounding
details.  :class:`Simulator` keeps the converted graphs of the all-int8 and all-int16 schemes
(``gm8``, ``gm16``: the same annotations, so the same nodes, with each grid's int8 or int16 qparams;
the observers saw the same float values, so a layer's grid in a mixed program is the one of its scheme
here) and builds, for any assignment, a graph in which

* each layer's grids are int8 (``gm8``'s q/dq), int16 (``gm16``'s) or bypassed (the float value), and
* each weighted op's weights are its int8 codes dequantized, or the float weights;

so "this layer alone in int8 (everything else float)", "this layer's weights alone" and "the whole
mix" are one forward each over the calibration samples.  Noise is the squared error of the outputs
against the float model, summed over every output element of every sample; SQNR =
``10 log10(signal / noise)``, as :func:`tabula.report.sqnr_db`.  An output that a softmax makes (a
classifier's probabilities) is measured at the softmax's input, the logits: there the layers' errors add,
while the softmax turns a small logit error on a near-tie into a large probability error, so on a few
ambiguous samples the probabilities' noise ranks layers by luck (kws, 102 calibration windows: putting
the input alone in int16 *lowered* the probabilities' SQNR from 27.7 to 27.2 dB and raised the logits'
from 31.0 to 33.6 dB; the input alone in int8 is the model's largest noise source).

A grid is attributed to the layer (:mod:`tabula.quantizer.precision`) of the node it quantizes; a
requantization (PT2E's ``q -> dq -> q``, e.g. a cat's input onto the cat's grid) to the layer of the
op that reads it.
"""
from __future__ import annotations

import copy
import functools
from typing import Iterable

import numpy as np
import torch
from torch.fx import GraphModule, Node

from .. import rules
from ..fx import is_dequantize, is_dequantize_per_channel, is_quantize
from .precision import layer_of

__all__ = ["Simulator", "before_softmax", "fake_quantize"]


def fake_quantize(x: torch.Tensor, scale: float, zero_point: int, qmin: int, qmax: int) -> torch.Tensor:
    """``dequantize(quantize(x))`` on one grid, with the arithmetic of PT2E's ``quantize_per_tensor`` /
    ``dequantize_per_tensor`` (``quantized_decomposed``: ``round(x * (1 / scale))`` half to even, + zero
    point, clamp; then ``(q - zero_point) * scale``), in float: the same values, and basic ops that
    ``torch.func.vmap`` batches."""
    q = torch.clamp(torch.round(x * (1.0 / scale)) + zero_point, qmin, qmax)
    return (q - zero_point) * scale


_SOFTMAX = frozenset({"aten.softmax", "aten._softmax", "aten._safe_softmax", "tabula.softmax"})


def before_softmax(gm: GraphModule) -> GraphModule:
    """``gm`` (modified in place, recompiled) with every output that is a softmax -- directly or through the
    ``fake_quantize`` (or PT2E's quantize -> dequantize) of its grid -- replaced by the softmax's input (with
    that input's own quantization, if any): the logits the sensitivity is measured on (module docstring).
    Other outputs stay."""
    g = gm.graph
    out = next(n for n in g.nodes if n.op == "output")

    def logits(v):
        n = v
        while isinstance(n, Node) and n.op == "call_function" and (n.target is fake_quantize or is_quantize(n)
                                                                   or is_dequantize(n)):
            n = n.args[0]
        if isinstance(n, Node) and n.op == "call_function" and rules.canonical_op(n.target) in _SOFTMAX:
            return n.args[0]
        return v

    out.args = (torch.utils._pytree.tree_map(lambda v: logits(v) if isinstance(v, Node) else v, out.args[0]),)
    g.eliminate_dead_code()
    gm.recompile()
    return gm


class Simulator:
    """The float model and its two converted graphs, run on ``samples`` (a list of input tuples).

    Args:
        float_gm: the float graph both schemes were quantized from (:func:`tabula.quantizer.float_graph`,
            before ``prepare_pt2e``: its node names are the converted graphs').
        gm8, gm16: the converted graphs of the int8 and a16w8 schemes.
        samples: the input tuples to measure on (float tensors, the example's batch size).
    Raises:
        ValueError: the two converted graphs do not have the same quantize nodes (not one annotation).
    """

    def __init__(self, float_gm: GraphModule, gm8: GraphModule, gm16: GraphModule, samples: list[tuple]):
        self.float_gm = float_gm
        self.gm8, self.gm16 = gm8, gm16
        self.samples = samples
        owner = layer_of(float_gm)
        self._owner = {n.name: o.name for n, o in owner.items()}
        q16 = {n.name: n for n in gm16.graph.nodes if is_quantize(n) or is_dequantize(n)}
        self._layer_of_q: dict[str, str] = {}
        for n in gm8.graph.nodes:
            if not (is_quantize(n) or is_dequantize(n)):
                continue
            if n.name not in q16:
                raise ValueError(f"the int8 and int16 quantizations differ at {n.name}: not one annotation")
            if is_quantize(n):
                self._layer_of_q[n.name] = self._attribute(n)
        self._weights = self._float_weights()
        self._dq_cache: dict[str, torch.Tensor] = {}
        self._mode: str | None = None
        self._stacked: list[torch.Tensor] = []
        self._noise: dict = {}
        self.reference = [t.double() for t in self._forward(before_softmax(copy.deepcopy(float_gm)))]
        self.signal = float(sum(float((r**2).sum()) for r in self.reference))

    # -- attribution ----------------------------------------------------------------------
    def _attribute(self, q: Node) -> str | None:
        """The layer of a quantize node: that of the value it quantizes; for a requantization
        (its input a dequantize), that of the op reading it."""
        src = q.args[0]
        if isinstance(src, Node) and not is_dequantize(src):
            return self._owner.get(src.name)
        for dq in q.users:
            for u in dq.users:
                if u.name in self._owner:
                    return self._owner[u.name]
        return self._owner.get(getattr(src, "name", ""))

    @property
    def weighted(self) -> set[str]:
        """The names of the weighted nodes (whose weights :meth:`graph` can keep float)."""
        return set(self._weights)

    def layers_of_grids(self) -> set[str]:
        """The layers that own at least one grid."""
        return {v for v in self._layer_of_q.values() if v is not None}

    def _float_weights(self) -> dict[str, torch.Tensor]:
        """Weighted node name -> its float weight (from ``float_gm``)."""
        out = {}
        for n in self.float_gm.graph.nodes:
            if n.op == "call_function" and rules.op_class(n.target) is rules.OpClass.WEIGHTED:
                _, iw, _ = rules.WEIGHTED[rules.canonical_op(n.target)]
                w = n.args[iw]
                if isinstance(w, Node) and w.op == "get_attr":
                    out[n.name] = functools.reduce(getattr, str(w.target).split("."), self.float_gm).detach()
        return out

    # -- building a configuration ---------------------------------------------------------------
    def graph(self, acts: dict[str, str | None], weights: Iterable[str] | None = None) -> GraphModule:
        """A copy of ``gm8`` computing: layer ``L``'s grids in ``acts[L]`` (``"int8"``, ``"a16w8"``; a
        layer missing or None: float), and the int8 weights of the weighted nodes in ``weights`` (None:
        every one), the float weights elsewhere.  Each grid's ``quantize -> dequantize`` pair is one
        ``fake_quantize_per_tensor_affine`` (the same values: round half to even, clamp, rescale), each
        weight a constant (its int8 codes dequantized once, or the float weight)."""
        gm = copy.deepcopy(self.gm8)
        src16 = {n.name: n for n in self.gm16.graph.nodes}
        wset = None if weights is None else set(weights)
        g = gm.graph
        for n in list(g.nodes):
            if not is_quantize(n):
                continue
            mode = acts.get(self._layer_of_q.get(n.name))
            args = src16[n.name].args if mode == "a16w8" else n.args
            x, scale, zp, qmin, qmax = args[0:5]
            x = n.args[0]
            fq = None
            if mode is not None:
                with g.inserting_before(n):
                    fq = g.call_function(fake_quantize, (x, float(scale), int(zp), int(qmin), int(qmax)))
            for dq in list(n.users):
                dq.replace_all_uses_with(fq if fq is not None else x)
                g.erase_node(dq)
            g.erase_node(n)
        for n in list(g.nodes):
            if n.op != "call_function" or rules.op_class(n.target) is not rules.OpClass.WEIGHTED:
                continue
            _, iw, _ = rules.WEIGHTED[rules.canonical_op(n.target)]
            w = n.args[iw]
            if not is_dequantize_per_channel(w) or n.name not in self._weights:
                continue
            quantized = wset is None or n.name in wset
            value = self._dequantized_weight(w) if quantized else self._weights[n.name]
            attr = f"_tabula_weight_{n.name}"
            gm.register_buffer(attr, value)
            with g.inserting_before(n):
                fw = g.get_attr(attr)
            args = list(n.args)
            args[iw] = fw
            n.args = tuple(args)
        before_softmax(gm)
        return gm

    def _dequantized_weight(self, dq: Node) -> torch.Tensor:
        """The float value of a ``dequantize_per_channel`` of constants (computed once per node)."""
        if dq.name not in self._dq_cache:
            args = [functools.reduce(getattr, str(a.target).split("."), self.gm8) if isinstance(a, Node) else a
                    for a in dq.args]
            self._dq_cache[dq.name] = dq.target(*args, **dq.kwargs).detach()
        return self._dq_cache[dq.name]

    # -- measuring -------------------------------------------------------------------------------
    def _forward(self, gm: GraphModule) -> list[torch.Tensor]:
        """``gm``'s output leaves over every sample: one batched call when the graph takes the samples
        stacked along the batch axis (checked once against one call per sample), else ``torch.func.vmap``
        over them, else one call per sample; each leaf ``[n_samples, ...]``."""
        with torch.no_grad():
            if self._mode is None:
                self._mode = self._pick_mode(gm)
            try:
                return self._forward_as(gm, self._mode)
            except Exception:  # batched before, not this graph: one call per sample from now on
                if self._mode == "loop":
                    raise
                self._mode = "loop"
                return self._forward_as(gm, "loop")

    def _forward_as(self, gm: GraphModule, mode: str) -> list[torch.Tensor]:
        with torch.no_grad():
            if mode == "batch":
                return [t.reshape(len(self.samples), -1) for t in torch.utils._pytree.tree_leaves(gm(*self._stacked))]
            if mode == "vmap":
                out = torch.func.vmap(gm)(*[t.unsqueeze(1) for t in self._stacked])
                return [t.reshape(len(self.samples), -1) for t in torch.utils._pytree.tree_leaves(out)]
            per = [torch.utils._pytree.tree_leaves(gm(*s)) for s in self.samples]
            return [torch.stack([p[k].reshape(-1) for p in per]) for k in range(len(per[0]))]

    def _pick_mode(self, gm: GraphModule) -> str:
        if not self.samples or any(int(t.shape[0]) != 1 for t in self.samples[0] if t.dim()):
            return "loop"
        self._stacked = [torch.cat([s[k] for s in self.samples]) for k in range(len(self.samples[0]))]
        few = self.samples[: min(3, len(self.samples))]
        want = [torch.cat([t.reshape(-1) for t in torch.utils._pytree.tree_leaves(gm(*s))]) for s in few]
        for mode in ("batch", "vmap"):
            try:
                got = self._forward_as(gm, mode)
            except Exception:  # a graph specialised to batch 1 (a view of [1, C]), an op vmap cannot batch
                continue
            row = [torch.cat([t[i] for t in got]) for i in range(len(few))]
            if all(r.shape == w.shape and torch.allclose(r, w, rtol=1e-5, atol=1e-6) for r, w in zip(row, want)):
                return mode
        return "loop"

    def noise(self, acts: dict[str, str | None], weights: Iterable[str] | None = None) -> float:
        """Summed squared output error against the float model of :meth:`graph` ``(acts, weights)``."""
        key = (tuple(sorted((k, v) for k, v in acts.items() if v is not None)),
               None if weights is None else tuple(sorted(weights)))
        if key not in self._noise:
            got = self._forward(self.graph(acts, weights))
            self._noise[key] = float(sum(float(((g.double() - r) ** 2).sum()) for g, r in zip(got, self.reference)))
        return self._noise[key]

    def sqnr(self, noise: float) -> float:
        """``noise`` as an SQNR in dB against the float outputs' power (inf for no noise)."""
        return float("inf") if noise <= 0 else float(10.0 * np.log10(self.signal / noise))
