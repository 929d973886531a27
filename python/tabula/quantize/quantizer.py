"""tabula's PT2E ``Quantizer``: annotates a ``torch.export``ed graph from the rules table.

int8 scheme (``"int8"``):
  activations  per-tensor affine int8 [-128, 127], HistogramObserver;
  weights      per-channel symmetric int8 [-127, 127] on axis 0 (OIHW / [out, in]), PerChannelMinMaxObserver;
  bias         int32, per-channel, scale = s_in * s_w[c], zero_point 0 (DerivedQuantizationSpec).
"""
from __future__ import annotations

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import HistogramObserver, PerChannelMinMaxObserver
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

from . import rules

SCHEMES = ("int8",)

_ANN = "quantization_annotation"


class UnsupportedOpError(ValueError):
    """The model uses ops the rules table does not cover.  ``ops`` lists ``(op name, source)``."""

    def __init__(self, ops: list[tuple[str, str]]):
        self.ops = ops
        lines = "\n".join(f"  - {name}  ({src})" for name, src in ops)
        super().__init__(
            f"{len(ops)} unsupported op(s) in the model:\n{lines}\n"
            f"tabula supports: {', '.join(rules.supported_ops())}.\n"
            "Rewrite the model with supported ops, or add a rule in python/tabula/quantize/rules.py "
            "together with its lowering."
        )


def node_source(node: Node) -> str:
    """``file.py:line node <name>``: the innermost frame of the export stack trace that is not inside
    torch itself (the user's model code), or just the node name.  Only the file's base name is kept
    so generated sources are reproducible across checkouts."""
    trace = node.meta.get("stack_trace") or ""
    frames = []
    for ln in trace.splitlines():
        ln = ln.strip()
        if ln.startswith('File "') and ", line " in ln:
            fname = ln.split('"')[1]
            lineno = ln.split(", line ")[1].split(",")[0]
            frames.append((fname, lineno))
    user = [f for f in frames if "/torch/" not in f[0] and "/torchao/" not in f[0]]
    if user or frames:
        fname, lineno = (user or frames)[-1]
        return f"{fname.rsplit('/', 1)[-1]}:{lineno} node {node.name}"
    return f"node {node.name}"


def check_supported(gm: GraphModule) -> None:
    """Raise :class:`UnsupportedOpError` listing *every* unsupported op of ``gm`` (with its source
    line) -- called before any calibration runs."""
    bad = []
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        name = rules.canonical_op(n.target)
        if name in rules.IGNORED or name in rules.STRUCTURAL:
            continue
        if rules.op_class(n.target) is None:
            bad.append((name, node_source(n)))
    if bad:
        raise UnsupportedOpError(bad)


def _act_qspec() -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8,
        quant_min=-128,
        quant_max=127,
        qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=HistogramObserver.with_args(eps=2**-24),
    )


def _weight_qspec() -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8,
        quant_min=-127,
        quant_max=127,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
        observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=2**-24),
    )


def _bias_qspec(node: Node, x: Node, w: Node, b: Node) -> DerivedQuantizationSpec:
    def derive(observers):
        act_obs, w_obs = observers
        s_in, _ = act_obs.calculate_qparams()
        s_w, _ = w_obs.calculate_qparams()
        scale = (s_in * s_w).to(torch.float32)
        return scale, torch.zeros_like(scale, dtype=torch.int32)

    return DerivedQuantizationSpec(
        derived_from=[(x, node), (w, node)],
        derive_qparams_fn=derive,
        dtype=torch.int32,
        quant_min=-(2**31) + 1,
        quant_max=2**31 - 1,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )


class TabulaQuantizer(Quantizer):
    """Annotates every node from :mod:`tabula.quantize.rules`; nothing else decides qparams."""

    def __init__(self, scheme: str = "int8") -> None:
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
        self.scheme = scheme

    def annotate(self, model: GraphModule) -> GraphModule:
        check_supported(model)
        for node in model.graph.nodes:
            if node.op != "call_function":
                continue
            cls = rules.op_class(node.target)
            name = rules.canonical_op(node.target)
            if cls is rules.OpClass.WEIGHTED:
                ix, iw, ib = rules.WEIGHTED[name]
                x, w = node.args[ix], node.args[iw]
                qmap = {x: _act_qspec(), w: _weight_qspec()}
                b = node.args[ib] if len(node.args) > ib else None
                if isinstance(b, Node):
                    qmap[b] = _bias_qspec(node, x, w, b)
                node.meta[_ANN] = QuantizationAnnotation(qmap, _act_qspec(), _annotated=True)
            elif cls is rules.OpClass.TABLE:
                x = node.args[0]
                node.meta[_ANN] = QuantizationAnnotation({x: _act_qspec()}, _act_qspec(), _annotated=True)
            elif cls is rules.OpClass.SHARED:
                x = node.args[rules.SHARED[name]]
                producer_annotated = isinstance(x, Node) and _ANN in x.meta and x.meta[_ANN].output_qspec
                in_spec = SharedQuantizationSpec(x) if producer_annotated else _act_qspec()
                node.meta[_ANN] = QuantizationAnnotation(
                    {x: in_spec}, SharedQuantizationSpec((x, node)), _annotated=True
                )
        return model

    def validate(self, model: GraphModule) -> None:
        pass
