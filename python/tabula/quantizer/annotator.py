"""tabula's PT2E ``Quantizer``: annotates a ``torch.export``ed graph from the rules table only.

Schemes:

``int8``   activations per-tensor affine int8 [-128, 127]; weights per-channel symmetric int8
           [-127, 127] (axis 0); bias int32 with scale ``s_in * s_w[c]``.
``a16w8``  activations per-tensor symmetric int16 [-32767, 32767], zero point 0; weights as int8;
           bias int48 (TOSA's accumulator for int16 x int8).

In both schemes the bias stays float in the PT2E graph and the lowering quantizes it for each call
from that call's own input scale (:func:`tabula.lowering.ops._common.weighted`): a module called
twice on inputs of different scales (an unrolled recurrent cell, a shared head) shares one
``get_attr`` bias node, which PT2E would quantize once, at the first call's scale.  The lowering also
proves the bias and every accumulator fit (:mod:`tabula.lowering.bound_accumulators_pass`).

A conv/linear/add/matmul whose only user is a relu, relu6, hardtanh or constant clamp
(:func:`tabula.rules.fused_activation`) gets no output grid of its own: the activation's output
observer sets it, so the grid covers only the activation's range (TFLite and ExecuTorch do the
same) and the lowering clamps in the producer's epilogue.

Observers use ``eps = 2**-24`` so no scale is floored at a coarse epsilon (an eps of 2**-12 would
force every int16 scale to 1/4096).

Table ops get their *own* output qspec (:data:`TABLE_OUTPUT`): ``"exact"`` derives it from the exact
image of every input code under f (no code saturates, the full output range is used), ``"observed"``
calibrates it with an observer.  Domain-limited ops get fixed or domain-clipped input grids
(:func:`domain_grid`).

Arithmetic ops annotate their activation operands only: a constant operand (a buffer, a parameter,
anything :mod:`.fold_constants_pass` folded) stays float and the lowering quantizes it into the op's
int32 domain; a constant joined by a cat shares the cat's grid like any other input.  A model input
read by several ops, or returned as an output, gets its own grid (:meth:`TabulaQuantizer._annotate_shared_inputs`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e import HistogramObserver, PerChannelMinMaxObserver
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    FixedQParamsQuantizationSpec,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

from .. import rules
from ..errors import UnsupportedOpError
from ..fx import node_source

_ANN = "quantization_annotation"
EPS = 2.0**-24

#: How a table op's output qparams are chosen by default: "exact" or "observed".
TABLE_OUTPUT = "exact"

#: Calibrations with fewer inputs than this get min/max activation grids under ``observer="auto"``.
MIN_MAX_BELOW = 100

#: How calibrated activation grids are chosen (``observer=``), as the number of calibration inputs
#: below which an observer uses the observed min/max instead of HistogramObserver's L2-optimal grid:
#: ``"auto"`` (default) min/max below :data:`MIN_MAX_BELOW` inputs, histogram from there on;
#: ``"minmax"`` always; ``"histogram"`` never.  On a few inputs the histogram's clipped tails are
#: the activations that matter (MLPerf Tiny, 8-20 calibration inputs: kws 22.7 -> 28.6 dB, ic
#: 13.3 -> 18.0 dB with min/max); on many it gains a little (digits, 400: 35.7 -> 36.0 dB).
OBSERVERS = {"auto": MIN_MAX_BELOW, "minmax": 2**62, "histogram": 0}


@dataclass(frozen=True)
class Scheme:
    """Activation dtype and range of a quantization scheme."""

    name: str
    dtype: torch.dtype
    qmin: int
    qmax: int
    symmetric: bool
    ir_dtype: str


SCHEMES: dict[str, Scheme] = {
    "int8": Scheme("int8", torch.int8, -128, 127, False, "int8"),
    "a16w8": Scheme("a16w8", torch.int16, -32767, 32767, True, "int16"),
}


from .schemes import MIXED, SCHEME_NAMES  # noqa: E402

assert tuple(SCHEMES) + (MIXED,) == SCHEME_NAMES, "keep SCHEME_NAMES in tabula/quantizer/schemes.py in step"


def supported() -> list[str]:
    """Ops that have both a quantization rule and a lowering (:func:`tabula.lowering.pipeline.supported_ops`),
    and the ops rewritten into those before quantization (:data:`tabula.rules.REWRITTEN`)."""
    from ..lowering.pipeline import supported_ops

    return sorted(set(supported_ops()) | set(rules.REWRITTEN))


def check_supported(gm: GraphModule, scheme: str | None = None) -> None:
    """Raise :class:`UnsupportedOpError` listing *every* op of ``gm`` without a rule and a lowering
    (with its source line), every conversion to another dtype, and every node of a supported op that
    its lowering cannot take (the lowering module's ``unsupported(node)``,
    :func:`tabula.lowering.pipeline.unsupported_reason`: e.g. a pool with ``ceil_mode=True``, a div by
    an activation, a matmul of 4-D operands, a linear on a 4-D input, a softmax over a longer axis than
    ``scheme`` takes -- any scheme's limit when None) -- called before any calibration runs, so no such
    node ends in a LoweringError after it.  Identity ops and asserts pass (:mod:`.remove_identities_pass`
    removes them)."""
    from ..lowering.pipeline import unsupported_reason
    from .batch_norm import BATCH_NORM_OPS
    from .batch_norm import unsupported as batch_norm_unsupported
    from .decompose_ops_pass import unsupported as decompose_unsupported
    from .unroll_recurrent_pass import RECURRENT_OPS
    from .unroll_recurrent_pass import unsupported as recurrent_unsupported

    rewritten = {**{n: batch_norm_unsupported for n in BATCH_NORM_OPS}, **{n: recurrent_unsupported for n in RECURRENT_OPS}}

    ok = set(supported())
    dtype = SCHEMES[scheme].ir_dtype if scheme in SCHEMES else None
    bad = []
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        name = rules.canonical_op(n.target)
        if name in rules.STRUCTURAL or name in rules.ASSERTS:
            continue
        if name in rules.IDENTITY:
            if not rules.is_identity(n):
                dtype_to = getattr(n.meta.get("val"), "dtype", "another dtype")
                bad.append((f"{name} (a conversion to {dtype_to}; tabula runs float32 models)", node_source(n)))
            continue
        if name not in ok:
            bad.append((name, node_source(n)))
            continue
        # arithmetic (scalars, constants, broadcasting, div by a constant): the lowering's unsupported()
        if name in rules.REWRITTEN:
            why = rewritten.get(name, decompose_unsupported)(n)
        else:
            why = unsupported_reason(n, dtype)
        if why:
            bad.append((f"{name} {why}", node_source(n)))
    if bad:
        raise UnsupportedOpError(bad, supported())


def _is_activation(a) -> bool:
    """An FX value the device computes (not a constant ``get_attr``, not a Python scalar)."""
    return isinstance(a, Node) and a.op != "get_attr"


def _is_float(a) -> bool:
    """An FX value holding a float tensor (an activation or a float constant), not a mask or indices."""
    val = getattr(a, "meta", {}).get("val") if isinstance(a, Node) else None
    return isinstance(val, torch.Tensor) and val.is_floating_point()


# -- observers ------------------------------------------------------------------------------------
class FiniteHistogramObserver(HistogramObserver):
    """The activation observer: ignores NaN and +-inf (e.g. log of a calibration value <= 0), and
    counts its calibration inputs (forward calls).  Fewer than ``min_max_below`` of them: the grid
    spans the observed min/max (TFLite's calibration; no calibrated value is clipped); else
    HistogramObserver's grid (the one minimizing the L2 quantization error of the histogram, which may
    clip the tails).  See :data:`OBSERVERS`.  ``expected``: the number of calibration inputs, when known
    before calibrating (:func:`tabula.quantizer.flow.quantize_graph` sets it); fewer than ``min_max_below``:
    only the min/max is kept (the histogram, which that grid does not use, is not built)."""

    def __init__(self, *args, min_max_below: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.min_max_below = int(min_max_below)
        self.inputs = 0
        self.expected: int | None = None

    def min_max_only(self) -> bool:
        """Whether the grid will be the observed min/max (so no histogram is needed)."""
        return self.expected is not None and self.expected < self.min_max_below

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        self.inputs += 1
        x = x_orig.detach()
        finite = torch.isfinite(x)
        if not bool(finite.all()):
            x = x[finite]
            if x.numel() == 0:
                return x_orig
        if not self.min_max_only():
            super().forward(x)
        elif x.numel():  # HistogramObserver's running min/max, without its histogram
            x_min, x_max = torch.aminmax(x)
            self.min_val.copy_(torch.min(self.min_val, x_min))
            self.max_val.copy_(torch.max(self.max_val, x_max))
        return x_orig

    @torch.jit.export
    def calculate_qparams(self):
        observed = bool(self.min_val <= self.max_val)
        if observed and (self.inputs < self.min_max_below or self.min_max_only()):
            return self._calculate_qparams(self.min_val, self.max_val)
        return super().calculate_qparams()


class DomainHistogramObserver(FiniteHistogramObserver):
    """Observes inputs clipped to a table op's domain ``[domain_lo, domain_hi]``, so the calibrated
    grid never reaches past a domain edge (log, sqrt, rsqrt, reciprocal at 0; log1p at -1; acosh at 1)."""

    def __init__(self, *args, domain_lo: float = -math.inf, domain_hi: float = math.inf, **kwargs):
        super().__init__(*args, **kwargs)
        self.domain_lo = domain_lo
        self.domain_hi = domain_hi

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        super().forward(x_orig.detach().clamp(self.domain_lo, self.domain_hi))
        return x_orig


# -- qspecs ---------------------------------------------------------------------------------------
def _act_qspec(s: Scheme, observer=FiniteHistogramObserver, min_max_below: int = MIN_MAX_BELOW, **obs_kwargs) -> QuantizationSpec:
    if issubclass(observer, FiniteHistogramObserver):
        obs_kwargs["min_max_below"] = min_max_below
    return QuantizationSpec(
        dtype=s.dtype,
        quant_min=s.qmin,
        quant_max=s.qmax,
        qscheme=torch.per_tensor_symmetric if s.symmetric else torch.per_tensor_affine,
        observer_or_fake_quant_ctr=observer.with_args(eps=EPS, **obs_kwargs),
    )


def _weight_qspec(axis: int = 0) -> QuantizationSpec:
    return QuantizationSpec(
        dtype=torch.int8,
        quant_min=-127,
        quant_max=127,
        qscheme=torch.per_channel_symmetric,
        ch_axis=axis,
        observer_or_fake_quant_ctr=PerChannelMinMaxObserver.with_args(eps=EPS),
    )


def _fixed_qspec(s: Scheme, grid: rules.FixedGrid) -> FixedQParamsQuantizationSpec:
    """The output qspec of a fixed-grid op (``rules.FIXED_OUTPUT``): the grid's scale, zero point and
    code range, in the scheme's dtype (no observer)."""
    return FixedQParamsQuantizationSpec(
        dtype=s.dtype, scale=grid.scale, zero_point=grid.zero_point, quant_min=grid.qmin, quant_max=grid.qmax,
        qscheme=torch.per_tensor_symmetric if s.symmetric else torch.per_tensor_affine,
    )


def domain_grid(domain: rules.Domain, s: Scheme) -> tuple[float, int]:
    """The fixed input ``(scale, zero_point)`` of a domain-limited table op (``domain.fixed``).

    The grid is symmetric (zero point 0) over the codes ``[-qmax, qmax]`` of the scheme (int8: the
    quantize node clamps to [-127, 127]; the TABLE's entry for -128 is f at the domain edge).
    Closed domain ``[-1, 1]`` (asin, acos): ``scale = 1/qmax``, so both end points are codes and
    ``asin(+-1)`` / ``acos(-1) = pi`` are exact table inputs.  Open domain ``(-1, 1)`` (atanh):
    ``scale = 1/(qmax + 1)``, the largest power-of-two-denominator grid whose every code (the end
    codes sit at ``+-(1 - 1/(qmax+1))``, one LSB from the pole) is strictly inside after float32
    rounding, so no code can reach the pole.
    """
    half = max(abs(domain.lo), abs(domain.hi))
    scale = half / (s.qmax + 1) if domain.open else half / s.qmax
    return float(scale), 0


class TabulaQuantizer(Quantizer):
    """Annotates every node from :mod:`tabula.rules`; nothing else decides qparams.

    ``table_output``: ``"exact"`` (derived from the image of all input codes) or ``"observed"``.
    ``fuse_activations``: give a conv/linear/add/matmul followed by its only user relu/relu6/hardtanh/clamp
    the activation's output grid (default); ``False`` keeps the producer's own grid (for comparison).
    ``observer``: ``"auto"`` (default), ``"minmax"`` or ``"histogram"`` (:data:`OBSERVERS`).
    ``precision``: per layer, ``"int8"`` or ``"a16w8"`` (a :class:`~tabula.quantizer.precision.PrecisionMap`,
    or a dict layer owner name -> scheme; layers it does not name take ``scheme``): every node's qspecs
    are those of its layer's scheme (:mod:`tabula.quantizer.precision`), and a weighted, arithmetic or
    matmul input those of its producer's, so one tensor keeps one grid."""

    def __init__(self, scheme: str = "int8", table_output: str | None = None, fuse_activations: bool = True,
                 observer: str = "auto", precision=None) -> None:
        super().__init__()
        from .precision import PrecisionMap

        self.fuse_activations = bool(fuse_activations)
        if scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
        if precision is not None and not isinstance(precision, PrecisionMap):
            precision = PrecisionMap(dict(precision), default=scheme)
        self.precision = precision
        if observer not in OBSERVERS:
            raise ValueError(f"observer must be one of {', '.join(map(repr, OBSERVERS))}, not {observer!r}")
        self.observer = observer
        self.min_max_below = OBSERVERS[observer]
        self.scheme = SCHEMES[scheme]
        self.table_output = table_output or TABLE_OUTPUT
        if self.table_output not in ("exact", "observed"):
            raise ValueError(f"table_output must be 'exact' or 'observed', not {self.table_output!r}")

    def _scheme(self, node) -> Scheme:
        """The scheme of ``node``'s layer (``precision``), else the quantizer's."""
        return SCHEMES[self.precision.scheme_of(node)] if self.precision is not None else self.scheme

    def _act(self, node=None, observer=FiniteHistogramObserver, **obs_kwargs) -> QuantizationSpec:
        """A calibrated activation qspec of ``node``'s scheme (:meth:`_scheme`) and the ``observer`` choice."""
        return _act_qspec(self._scheme(node), observer, self.min_max_below, **obs_kwargs)

    # -- per class ---------------------------------------------------------------------------
    def _table(self, node: Node, name: str) -> QuantizationAnnotation:
        s = self._scheme(node)
        x = node.args[0]
        dom = rules.domain_of(name, node.args[1:])
        if dom is not None and dom.fixed:
            scale, zp = domain_grid(dom, s)
            in_spec = FixedQParamsQuantizationSpec(
                dtype=s.dtype, scale=scale, zero_point=zp, quant_min=-s.qmax, quant_max=s.qmax,
                qscheme=torch.per_tensor_symmetric if s.symmetric else torch.per_tensor_affine,
            )
        elif dom is not None:
            in_spec = self._act(node, DomainHistogramObserver, domain_lo=dom.lo, domain_hi=dom.hi)
        else:
            in_spec = self._act(node)
        if self.table_output == "observed" or node.meta.get("tabula_table_output") == "observed":
            out_spec = self._act(node)
        else:
            out_spec = self._exact_table_output(node, name, x, dom)
        return QuantizationAnnotation({x: in_spec}, out_spec, _annotated=True)

    def _exact_table_output(self, node: Node, name: str, x: Node, dom) -> DerivedQuantizationSpec:
        from ..qmath import table_output_qparams

        s = self._scheme(node)
        fn = rules.TABLE[name]
        extra, kwargs = tuple(node.args[1:]), dict(node.kwargs)
        domain = (dom.lo, dom.hi) if dom is not None else None

        def f(v):
            return fn(torch.from_numpy(v), *extra, **kwargs).numpy()

        def derive(observers):
            (obs,) = observers
            in_scale, in_zp = obs.calculate_qparams()
            scale, zp = table_output_qparams(f, float(in_scale.reshape(-1)[0]), int(in_zp.reshape(-1)[0]), s.ir_dtype, domain=domain)
            return torch.tensor([scale], dtype=torch.float32), torch.tensor([zp], dtype=torch.int32)

        return DerivedQuantizationSpec(
            derived_from=[(x, node)], derive_qparams_fn=derive, dtype=s.dtype, quant_min=s.qmin, quant_max=s.qmax,
            qscheme=torch.per_tensor_symmetric if s.symmetric else torch.per_tensor_affine,
        )

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        """The float-graph passes of :func:`tabula.quantizer.passes` (identities, constants, SiLU, recurrences), then fold or
        rewrite every BatchNorm (:func:`tabula.quantizer.batch_norm.fold_batch_norms`) -- in that order,
        so a ``clone`` between a conv and its BatchNorm or ReLU hides neither the fold nor the fused
        activation.  A no-op after :func:`tabula.quantizer.quantize`, which does it before ``prepare_pt2e``."""
        from ._passes import float_passes
        from .batch_norm import fold_batch_norms

        for _, run_pass in float_passes():
            run_pass(model)
        fold_batch_norms(model)
        return model

    def annotate(self, model: GraphModule) -> GraphModule:
        check_supported(model, self.scheme.name if self.precision is None else None)
        if self.precision is not None:
            self.precision.bind(model)
        for node in model.graph.nodes:
            if node.op != "call_function":
                continue
            cls = rules.op_class(node.target)
            name = rules.canonical_op(node.target)
            # a producer whose activation is fused has no grid of its own (the activation's output is it)
            out_spec = None if self._fused(node) is not None else self._act(node)
            if cls is rules.OpClass.WEIGHTED:
                ix, iw, _ = rules.WEIGHTED[name]
                x, w = node.args[ix], node.args[iw]
                # the bias stays float: the lowering quantizes it per call (see the module docstring)
                ann = QuantizationAnnotation({x: self._act(x), w: _weight_qspec(rules.WEIGHT_AXIS.get(name, 0))}, out_spec,
                                             _annotated=True)
            elif cls is rules.OpClass.TABLE:
                ann = self._table(node, name)
            elif cls is rules.OpClass.SHARED and self._fused(node.args[0]) is node:
                # fused activation: observes its own output, which is the producer's grid too
                ann = QuantizationAnnotation({}, self._act(node), _annotated=True)
            elif cls is rules.OpClass.SHARED and rules.own_average_grid(node):
                # an average: the producer's grid in, its own (calibrated) grid out (rules.AVERAGING)
                x = node.args[rules.SHARED[name]]
                producer_annotated = isinstance(x, Node) and _ANN in x.meta and x.meta[_ANN].output_qspec
                ann = QuantizationAnnotation({x: SharedQuantizationSpec(x) if producer_annotated else self._act(node)},
                                             self._act(node), _annotated=True)
            elif cls is rules.OpClass.SHARED:
                x = node.args[rules.SHARED[name]]
                producer_annotated = isinstance(x, Node) and _ANN in x.meta and x.meta[_ANN].output_qspec
                in_spec = SharedQuantizationSpec(x) if producer_annotated else self._act(node)
                ann = QuantizationAnnotation({x: in_spec}, SharedQuantizationSpec((x, node)), _annotated=True)
            elif cls is rules.OpClass.JOINING:
                inputs = [a for a in rules.joined_inputs(node) if _is_float(a)]
                if not inputs:
                    continue
                first = inputs[0]
                qmap = {first: self._act(node)}
                for a in inputs[1:]:
                    # the same value joined twice (cat([y, y])) is one input edge: it must keep the
                    # first edge's own spec, not share with itself (PT2E's union-find would loop)
                    if a not in qmap:
                        qmap[a] = SharedQuantizationSpec((first, node))
                # no implicit sharing with the producers: every input edge joins the one shared grid
                # (PT2E otherwise reuses each producer's own observer and the grids differ)
                ann = QuantizationAnnotation(qmap, SharedQuantizationSpec((first, node)), allow_implicit_sharing=False,
                                             _annotated=True)
            elif cls is rules.OpClass.ARITHMETIC:
                # activations only: a constant operand (get_attr) stays float, the lowering quantizes it
                # into the op's int32 domain; div divides by a constant only.  Output: own, or the fused
                # activation's (out_spec None: an add followed by its only user relu)
                n_args = 1 if name in ("aten.neg", "aten.div") else 2
                qmap = {a: self._act(a) for a in node.args[:n_args] if _is_activation(a)}
                ann = QuantizationAnnotation(qmap, out_spec, _annotated=True)
            elif cls is rules.OpClass.FIXED_OUTPUT:
                s = self._scheme(node)
                ann = QuantizationAnnotation({node.args[0]: self._act(node)},
                                             _fixed_qspec(s, rules.FIXED_OUTPUT[name][s.ir_dtype]), _annotated=True)
            elif cls is rules.OpClass.NORMALIZE:
                ann = QuantizationAnnotation({node.args[rules.NORMALIZE[name]]: self._act(node)}, self._act(node),
                                             _annotated=True)
            elif cls is rules.OpClass.MATMUL:
                qmap = {node.args[i]: self._act(node.args[i]) for i in rules.MATMUL[name]}
                ann = QuantizationAnnotation(qmap, out_spec, _annotated=True)
            elif cls is rules.OpClass.COMPARISON:
                # two activations on one grid (an exact comparison of codes), or one against a number; a mask out
                acts = [a for a in node.args[:2] if _is_float(a)]
                if not acts:
                    continue
                qmap = {acts[0]: self._act(acts[0])}  # the first operand's dtype (its producer's layer)
                for a in acts[1:]:
                    if a not in qmap:
                        qmap[a] = SharedQuantizationSpec((acts[0], node))
                ann = QuantizationAnnotation(qmap, None, allow_implicit_sharing=False, _annotated=True)
            elif cls is rules.OpClass.INDEX:
                x = node.args[rules.INDEX[name]]
                producer_annotated = isinstance(x, Node) and _ANN in x.meta and x.meta[_ANN].output_qspec
                ann = QuantizationAnnotation({x: SharedQuantizationSpec(x) if producer_annotated else self._act(x)}, None,
                                             _annotated=True)
            elif cls is rules.OpClass.MASK:
                continue  # masks in, a mask out: nothing to quantize (rules.MASK)
            else:
                continue
            node.meta[_ANN] = ann
        self._share_step_grids(model)
        self._annotate_shared_inputs(model)
        self._keep_joined_grids_apart(model)
        return model

    @staticmethod
    def _share_step_grids(model: GraphModule) -> None:
        """Nodes of an unrolled recurrence with the same :data:`tabula.rules.STEP_GRID_KEY` (one role of
        one layer at every step: a gate, the cell state, h) share the first one's output grid, observed
        over every step.  A cat of every step's h (the recurrent layer's output sequence) with the h key
        joins that grid on each input edge too, so it is a plain copy."""
        first: dict[str, Node] = {}
        for n in model.graph.nodes:
            key = n.meta.get(rules.STEP_GRID_KEY)
            ann = n.meta.get(_ANN)
            if key is None or ann is None or ann.output_qspec is None:
                continue
            if key not in first:
                first[key] = n
                continue
            ann.output_qspec = SharedQuantizationSpec(first[key])
            if rules.op_class(n.target) is rules.OpClass.JOINING:
                ann.input_qspec_map = {a: SharedQuantizationSpec(first[key]) for a in ann.input_qspec_map}

    def _annotate_shared_inputs(self, model: GraphModule) -> None:
        """A model input read by several ops (a cat and a conv, a fixed-domain table and a mul) or
        returned as an output gets its own grid, calibrated on the input itself: the device receives
        one integer tensor per input, and every consumer whose grid differs (a cat's shared grid, a
        fixed domain) reads it through a requantization (PT2E's q -> dq -> q: one RESCALE).  An input
        read by one op only keeps that op's input grid (no extra rounding), as before."""
        for node in model.graph.nodes:
            if node.op != "placeholder" or _ANN in node.meta:
                continue
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor) or not val.is_floating_point():
                continue
            users = list(node.users)
            if len(users) > 1 or any(u.op == "output" for u in users):
                node.meta[_ANN] = QuantizationAnnotation(output_qspec=self._act(node), _annotated=True)

    def _fused(self, node) -> Node | None:
        """The activation fused into ``node`` (:func:`tabula.rules.fused_activation`), unless fusion is off."""
        return rules.fused_activation(node) if self.fuse_activations else None

    @staticmethod
    def _keep_joined_grids_apart(model: GraphModule) -> None:
        """A value that feeds a cat *and* other ops: PT2E's implicit sharing joins an input edge with
        every other user's edge of the same producer when their specs look alike, so another
        consumer's edge pulled the cat's whole shared grid into the producer's own grid (tanh's, say)
        and the cat's other inputs were clipped to it (cat([t, exp(t)]): 7 dB SQNR).  Those other
        consumers share the producer's output explicitly instead, without implicit sharing."""
        joined = set()
        for n in model.graph.nodes:
            if n.op == "call_function" and rules.op_class(n.target) is rules.OpClass.JOINING:
                joined.update(rules.joined_inputs(n))
        for n in model.graph.nodes:
            ann = n.meta.get(_ANN)
            if ann is None or n.op != "call_function" or rules.op_class(n.target) is rules.OpClass.JOINING:
                continue
            shared = [x for x in ann.input_qspec_map if x in joined and len(x.users) > 1]
            if not shared or not ann.allow_implicit_sharing:
                continue
            for x in shared:
                spec = ann.input_qspec_map[x]
                producer = x.meta.get(_ANN)
                plain = isinstance(spec, QuantizationSpec) and \
                    getattr(spec.observer_or_fake_quant_ctr, "p", None) is not None and \
                    spec.observer_or_fake_quant_ctr.p.func is FiniteHistogramObserver
                if plain and producer is not None and producer.output_qspec is not None:
                    ann.input_qspec_map[x] = SharedQuantizationSpec(x)
            ann.allow_implicit_sharing = False

    def validate(self, model: GraphModule) -> None:
        pass
