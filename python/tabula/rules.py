"""The quantization rules table: every supported aten op and its class, as data.

The annotator (:mod:`tabula.quantizer.annotator`), the lowering, the reports and the tests read these
tables; nothing else decides an op's qparams.  A leaf (torch only), so every stage can import it.  Classes (README.md, "Quantization schemes and rules"):

``WEIGHTED``     input: activation qspec; weight: per-channel symmetric int8 [-127, 127] (axis 0);
                 bias: float in the PT2E graph, quantized at lowering per call to int32 (int8 scheme)
                 or int48 (a16w8) at scale s_in * s_w[c] of that call; output: own -- or, followed
                 by a fusable activation (:data:`FUSED_ACTIVATIONS`), the activation's.
``TABLE``        input: activation qspec -- or, for a domain-limited op (:data:`DOMAIN`), a grid fixed
                 by the op's mathematical domain or a calibrated grid clipped to it; output: **own**
                 (never shared: these functions compress or warp the range -- SiLU never goes below
                 about -0.2785).
``SHARED``       range-preserving ops (pooling, data movement, relu/clamp): input and output share
                 the producer's qparams exactly, so the integer op needs no RESCALE -- except the
                 averages of :data:`AVERAGING` (a mean over other dims than H and W,
                 adaptive_avg_pool1d), whose output gets its own calibrated grid
                 (:func:`own_average_grid`).
``JOINING``      cat/concat: every input and the output share one grid (the first input's), so
                 CONCAT is a plain copy.  (Chosen over a RESCALE per input: no extra ops, no double
                 rounding; the shared observer sees every input, so the grid covers them all.)
``ARITHMETIC``   add/sub/mul/rsub of two activations (shapes broadcast as NumPy), or of an activation and
                 a constant (a Python scalar, a buffer or parameter); neg; div by a constant.  Activation
                 inputs keep their own qparams, constants stay float until the lowering quantizes them
                 into the int32 domain of the op; output: own.  Lowered as RESCALE to int32,
                 ADD/SUB/MUL, RESCALE back -- a positive scalar factor (``x * 0.5``, ``x / 3``) as one
                 RESCALE; in int8 an op of one activation and scalars as one TABLE.
``FIXED_OUTPUT`` softmax: input calibrated (own); output on a grid fixed by the op's range, [0, 1]
                 (:data:`FIXED_OUTPUT`), as TFLite fixes it: no observer, and no code wasted on
                 values softmax never produces.
``REWRITTEN``    not a class: ops rewritten before quantization into ops of the classes above (BatchNorm:
                 folded into the conv/linear before it, else a 1x1 depthwise conv, WEIGHTED; LSTM / GRU:
                 unrolled over the steps into linear, sigmoid / tanh, mul, add, whose nodes of one role
                 share one grid over every step: :data:`STEP_GRID_KEY`).
``MATMUL``       matmul/bmm/mm of two activations (TOSA MATMUL): both inputs calibrated; output: own
                 (or a fused activation's).
``NORMALIZE``    layer_norm: input calibrated, output own; the affine weight and bias stay float and the
                 lowering folds them into its integer constants (:mod:`tabula.qmath.layer_norm`).
``COMPARISON``   gt/ge/lt/le/eq/ne: two activations share one grid (the codes order as the values), or an
                 activation against a number (a threshold code); output: a boolean mask, not quantized
                 (int8 0 / 1 in the IR), read by ``where`` (JOINING over its two value operands).
``INDEX``        argmax/argmin: input the producer's grid; output int32 indices, not quantized.
``MASK``         and / or / xor / not of boolean masks (``&``, ``|``, ``^``, ``~``, ``logical_*``) and ``any``:
                 inputs and output masks (int8 0 / 1 in the IR), never quantized -- no annotation at all.

Fused activations: a producer in :data:`FUSING_PRODUCERS` whose only user is an activation in
:data:`FUSED_ACTIVATIONS` (relu, relu6, hardtanh, clamp with constant bounds) has no grid of its own:
its output grid is the activation's, observed on the activation's output (as TFLite and ExecuTorch
do), so no code is spent below a ReLU's 0; the lowering clamps in the producer's epilogue
(:func:`fused_activation`).

In-place overloads (``aten.silu_``, ``aten.relu_``, ...) resolve to their functional twin *before*
lookup (:func:`tabula.fx.canonical_op`), so the two can never be classified differently.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Callable

import torch
from torch.fx import Node

from .fx import canonical_op

aten = torch.ops.aten

__all__ = ["OpClass", "WEIGHTED", "WEIGHT_AXIS", "TABLE", "Domain", "DOMAIN", "domain_of", "SHARED", "JOINING", "ARITHMETIC",
           "JOINING_ARGS", "joined_inputs", "COMPARISON", "INDEX", "MASK",
           "REWRITTEN", "STEP_GRID_KEY", "IGNORED", "IDENTITY", "ASSERTS", "STRUCTURAL", "canonical_op", "op_class", "is_identity",
           "supported_ops", "FixedGrid", "SOFTMAX_GRID", "FIXED_OUTPUT", "MATMUL", "FUSED_ACTIVATIONS",
           "FUSING_PRODUCERS", "fused_activation", "NORMALIZE", "AVERAGING", "own_average_grid"]


class OpClass(Enum):
    """How an op's input and output qparams are chosen."""

    WEIGHTED = "weighted"
    TABLE = "table"
    SHARED = "shared"
    JOINING = "joining"
    ARITHMETIC = "arithmetic"
    FIXED_OUTPUT = "fixed output"
    MATMUL = "matmul"
    NORMALIZE = "normalize"
    COMPARISON = "comparison"
    INDEX = "index"
    MASK = "mask"


#: Weighted ops: aten packet name -> index of (input, weight, bias) in the node's args.
WEIGHTED: dict[str, tuple[int, int, int]] = {
    "aten.conv2d": (0, 1, 2),
    "aten.linear": (0, 1, 2),
    "aten.conv1d": (0, 1, 2),  # groups (depthwise, grouped) and padding="same" as conv2d
    "aten.conv_transpose2d": (0, 1, 2),  # TOSA TRANSPOSE_CONV2D; weight [Cin, Cout, KH, KW]
}

#: The output-channel axis of a weighted op's weight, where it is not 0 (the per-channel qspec's axis).
WEIGHT_AXIS: dict[str, int] = {"aten.conv_transpose2d": 1}

#: Table ops: aten packet name -> the float function the TABLE samples (PyTorch's own op, called with
#: the node's extra arguments, so the table reproduces PyTorch's float semantics exactly).
TABLE: dict[str, Callable[..., torch.Tensor]] = {
    "aten.silu": aten.silu.default,
    "aten.sigmoid": aten.sigmoid.default,
    "aten.tanh": aten.tanh.default,
    "aten.gelu": aten.gelu.default,  # approximate="none" or "tanh" (a node argument)
    "aten.elu": aten.elu.default,
    "aten.leaky_relu": aten.leaky_relu.default,
    "aten.hardswish": aten.hardswish.default,
    "aten.hardsigmoid": aten.hardsigmoid.default,
    "aten.softplus": aten.softplus.default,
    "aten.exp": aten.exp.default,
    "aten.expm1": aten.expm1.default,
    "aten.log": aten.log.default,
    "aten.log1p": aten.log1p.default,
    "aten.sqrt": aten.sqrt.default,
    "aten.rsqrt": aten.rsqrt.default,
    "aten.reciprocal": aten.reciprocal.default,
    "aten.erf": aten.erf.default,
    "aten.sin": aten.sin.default,
    "aten.cos": aten.cos.default,
    "aten.tan": aten.tan.default,
    "aten.atan": aten.atan.default,
    "aten.asin": aten.asin.default,
    "aten.acos": aten.acos.default,
    "aten.atanh": aten.atanh.default,
    "aten.sinh": aten.sinh.default,
    "aten.cosh": aten.cosh.default,
    "aten.asinh": aten.asinh.default,
    "aten.acosh": aten.acosh.default,
    "aten.pow": aten.pow.Tensor_Scalar,  # constant exponent only
    "aten.abs": aten.abs.default,  # int16: the TABLE's knots hold the kink at 0 (zero point 0)
    "aten.mish": aten.mish.default,
    "aten.log2": aten.log2.default,
    "aten.log10": aten.log10.default,
    "aten.selu": aten.selu.default,
    "aten.celu": aten.celu.default,  # alpha (a node argument)
    "aten.erfinv": aten.erfinv.default,  # fixed open grid on (-1, 1), as atanh
    "aten.logit": aten.logit.default,  # log(x / (1 - x)), eps (a node argument) clamps x to [eps, 1 - eps]
    # piecewise constant: int8 a TABLE (exact); int16 exact integer steps (qmath.piecewise.STEPS_INT16)
    "aten.sign": aten.sign.default,
    "aten.round": lambda x, decimals=0: aten.round.decimals(x, decimals=decimals) if decimals else aten.round.default(x),
    "aten.ceil": aten.ceil.default,
    "aten.floor": aten.floor.default,
    # x / (|x| + 1), PyTorch's F.softsign, fused from its abs / add / div before quantization
    # (quantizer/fuse_softsign_pass.py registers the op)
    "tabula.softsign": lambda x: x / (x.abs() + 1),
}


@dataclass(frozen=True)
class Domain:
    """The real interval ``[lo, hi]`` on which a table op is defined.

    ``fixed``: the input grid is fixed by the domain, not calibrated (asin, acos, atanh).
    Otherwise the calibrated range is clipped to the domain (log, sqrt, ...): calibration outliers
    can then never produce out-of-domain codes.  ``open``: the end points themselves are outside
    (atanh); for the other ops an end point may be a pole (log(0) = -inf), where the TABLE saturates.
    """

    lo: float
    hi: float
    fixed: bool = False
    open: bool = False


#: Domain-limited table ops.
DOMAIN: dict[str, Domain] = {
    "aten.asin": Domain(-1.0, 1.0, fixed=True),
    "aten.acos": Domain(-1.0, 1.0, fixed=True),
    "aten.atanh": Domain(-1.0, 1.0, fixed=True, open=True),
    "aten.log": Domain(0.0, math.inf),
    "aten.log1p": Domain(-1.0, math.inf),
    "aten.sqrt": Domain(0.0, math.inf),
    "aten.rsqrt": Domain(0.0, math.inf),
    "aten.reciprocal": Domain(0.0, math.inf),
    "aten.acosh": Domain(1.0, math.inf),
    "aten.log2": Domain(0.0, math.inf),
    "aten.log10": Domain(0.0, math.inf),
    "aten.erfinv": Domain(-1.0, 1.0, fixed=True, open=True),
    # calibrated, clipped to [0, 1] (a fixed symmetric grid would spend half its codes below 0 and put code 0
    # on the pole): the TABLE saturates at the poles 0 and 1, as log at 0
    "aten.logit": Domain(0.0, 1.0),
}

def domain_of(name: str, args=()) -> Domain | None:
    """The domain of table op ``name`` called with extra arguments ``args``: :data:`DOMAIN`, and for
    ``pow`` with a non-integer constant exponent ``[0, inf)`` (negative bases give NaN)."""
    if name == "aten.pow" and args and float(args[0]) != int(float(args[0])):
        return Domain(0.0, math.inf)
    return DOMAIN.get(name)


#: Range-preserving ops that share their producer's qparams: packet name -> index of the data input.
SHARED: dict[str, int] = {
    "aten.max_pool2d": 0,
    "aten.avg_pool2d": 0,
    "aten.adaptive_avg_pool2d": 0,
    "aten.mean": 0,
    "aten.flatten": 0,
    "aten.view": 0,
    "aten.reshape": 0,
    "aten.permute": 0,
    "aten.transpose": 0,
    "aten.slice": 0,
    "aten.pad": 0,
    "aten.upsample_nearest2d": 0,
    "aten.relu": 0,
    "aten.hardtanh": 0,
    "aten.relu6": 0,
    "aten.clamp": 0,
    "aten.unsqueeze": 0,
    "aten.squeeze": 0,
    "aten.max_pool1d": 0,
    "aten.avg_pool1d": 0,
    "aten.t": 0,
    "aten.select": 0,  # integer indexing (``x[0]``, ``y[:, -1]``): SLICE + RESHAPE
    "aten.narrow": 0,
    "aten.unflatten": 0,
    "aten.expand": 0,  # TILE (a size-1 axis repeated), RESHAPE first where the rank grows
    "aten.repeat": 0,  # TILE with multiples = repeats (TOSA TILE is PyTorch's repeat), RESHAPE first likewise
    "aten.adaptive_avg_pool1d": 0,
    "aten.upsample_bilinear2d": 0,  # RESIZE BILINEAR, then RESCALE back onto the input grid
    "aten.flip": 0,  # REVERSE, one per dim
    "aten.amax": 0,  # REDUCE_MAX on the codes, one per dim (exact on one grid)
    "aten.amin": 0,  # REDUCE_MIN on the codes, one per dim
    "aten.sum": 0,  # own output grid (AVERAGING): the int32 sum and one RESCALE
    "aten.cumsum": 0,  # own output grid (AVERAGING): FULLY_CONNECTED with triangular ones, one RESCALE
    # indexing by constant indices: GATHER of a constant index map (codes copied; lowering/ops/gather.py)
    "aten.gather": 0,
    "aten.index": 0,  # x[..., index] with index tensors (constants)
    "aten.index_select": 0,
    "aten.as_strided": 0,  # strides over the input's row-major elements
    "aten.unfold": 0,
    # the table (arg 0, a weight) on a per-tensor activation grid observed over it, the rows GATHERed at the
    # int32 indices an argmax wrote: the output shares the table's grid (lowering/ops/embedding.py)
    "aten.embedding": 0,
}

#: Averages whose output gets its own calibrated grid instead of the input's (``aten.mean`` over any dims but
#: H and W of a 4-D tensor, ``adaptive_avg_pool1d``): an average of many codes spans a much narrower range
#: than its input (a global pool of ReLU outputs), so the input's grid would waste most of its codes.
#: Lowered as the int32 sum and one RESCALE to the output grid (a single rounding).
AVERAGING: frozenset[str] = frozenset({"aten.mean", "aten.adaptive_avg_pool1d", "aten.sum", "aten.cumsum"})


def own_average_grid(node: Node) -> bool:
    """``node`` (an FX node of an :data:`AVERAGING` op) gets its own output grid: every such op but a mean
    over H and W of a 4-D tensor (AVG_POOL2D on the shared grid, as before)."""
    name = canonical_op(node.target)
    if name not in AVERAGING:
        return False
    if name == "aten.mean":
        val = getattr(node.args[0], "meta", {}).get("val")
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if val is not None and val.dim() == 4 and dims is not None and not isinstance(dims, int) and \
                sorted(int(d) % 4 for d in dims) == [2, 3]:
            return False
    return True


#: Joining ops: packet name -> index of the tensor-list argument.
JOINING: dict[str, int] = {
    "aten.cat": 0,
    "aten.concat": 0,
}

#: Joining ops of separate tensor arguments: packet name -> indices of the arguments that share the one
#: grid with the output.  On one grid the integer op is exact: ``q(max(a, b)) == max(q(a), q(b))``, and a
#: SELECT copies codes.  A constant operand (``where(m, x, 0.0)``'s lifted scalar, a buffer) is quantized
#: onto that grid by PT2E (saturating at its ends); the condition of ``where`` is a mask, not quantized.
JOINING_ARGS: dict[str, tuple[int, ...]] = {
    "aten.maximum": (0, 1),
    "aten.minimum": (0, 1),
    "aten.where": (1, 2),  # where(condition, self, other)
    # writes at constant indices (GATHER of a constant index map over x and the values:
    # lowering/ops/scatter.py): the grid is observed over x and the written values, so a constant value
    # outside x's range is on it too (quantized onto it by PT2E, saturating at its ends)
    "aten.index_put": (0, 2),  # index_put(self, indices, values, accumulate=False)
    "aten.index_copy": (0, 3),  # index_copy(self, dim, index, source)
    "aten.select_scatter": (0, 1),  # select_scatter(self, src, dim, index)
    "aten.slice_scatter": (0, 1),  # slice_scatter(self, src, dim, start, end, step)
}


def joined_inputs(node: Node) -> list:
    """The FX nodes of a :data:`JOINING` / :data:`JOINING_ARGS` op that share its one grid, in argument
    order (constants included: PT2E quantizes them on the grid; numbers left out)."""
    name = canonical_op(node.target)
    if name in JOINING:
        return [a for a in node.args[JOINING[name]] if isinstance(a, Node)]
    return [node.args[i] for i in JOINING_ARGS[name] if i < len(node.args) and isinstance(node.args[i], Node)]


#: Comparisons: packet name -> the indices of their two operands.  Two activations share one grid (their
#: codes then order as their values do: the integer comparison is exact); an activation and a number is
#: the activation's codes against a threshold code (exact: the comparison PyTorch makes in float32 on every
#: code).  The output is a boolean mask: not quantized, int8 0 / 1 in the IR (TOSA's bool).
COMPARISON: dict[str, tuple[int, int]] = {
    "aten.gt": (0, 1), "aten.ge": (0, 1), "aten.lt": (0, 1), "aten.le": (0, 1), "aten.eq": (0, 1), "aten.ne": (0, 1),
}

#: Index ops: packet name -> index of the data input (the producer's grid: codes order as the values do);
#: the output is integer indices (int32 in the IR, PyTorch's int64), not quantized.
INDEX: dict[str, int] = {"aten.argmax": 0, "aten.argmin": 0}

#: Mask logic: packet name -> the indices of its mask operands.  Boolean masks (a comparison's, a constant's)
#: combined, negated or reduced: every operand and the output is a mask, never quantized (int8 0 / 1 in the IR,
#: TOSA's bool), so the op has no grid and no annotation; the integer op on 0 / 1 is the logical one, exact.
#: ``&`` / ``|`` / ``^`` / ``~`` reach the graph as ``__and__`` / ... (or ``bitwise_*`` called by name); a
#: number operand (``m & True``) is a boolean constant.  ``any``: over a dim, dims, or every element.
MASK: dict[str, tuple[int, ...]] = {
    **{n: (0, 1) for n in ("aten.bitwise_and", "aten.__and__", "aten.logical_and", "aten.bitwise_or", "aten.__or__",
                           "aten.logical_or", "aten.bitwise_xor", "aten.__xor__", "aten.logical_xor")},
    **{n: (0,) for n in ("aten.bitwise_not", "aten.logical_not", "aten.any")},
}

#: Arithmetic ops: of two activations, or of an activation and a constant (div: by a constant only).
ARITHMETIC: frozenset[str] = frozenset({"aten.add", "aten.sub", "aten.mul", "aten.rsub", "aten.neg", "aten.div",
                                        "aten.remainder", "aten.fmod", "aten.floor_divide"})
# remainder / fmod, floor_divide and div with rounding_mode "floor" / "trunc": by a number, int8 only (one TABLE)

#: Identity-like ops: the value passes through unchanged (dropout at inference, copies, aliases, a
#: conversion to the dtype the value already has).  :mod:`tabula.quantizer.remove_identities_pass`
#: removes them before quantization, so they share their producer's grid and cost nothing on the
#: device.  ``_to_copy`` / ``to`` to *another* dtype is not one (:func:`is_identity`).
IDENTITY: frozenset[str] = frozenset({
    "aten.clone", "aten.contiguous", "aten.detach", "aten.alias", "aten.lift_fresh_copy", "aten.dropout",
    "aten.feature_dropout", "aten.alpha_dropout", "aten.feature_alpha_dropout", "aten._to_copy", "aten.to",
})

#: Checks that compute nothing (export's metadata asserts): removed with the identities.
ASSERTS: frozenset[str] = frozenset({"aten._assert_tensor_metadata", "aten._assert_scalar", "aten._assert_async"})


@dataclass(frozen=True)
class FixedGrid:
    """An output grid fixed by the op: ``real = (q - zero_point) * scale`` on codes [qmin, qmax]."""

    scale: float
    zero_point: int
    qmin: int
    qmax: int


#: Softmax's output grid, [0, 1], per scheme activation dtype.  int8: scale 1/256, zero point -128
#: (TFLite's): codes -128..127 hold 0..255/256, so p = 1 saturates to 255/256 (half an LSB off).
#: int16: symmetric (zero point 0, as every int16 tensor), scale 1/32767: codes 0..32767 hold exactly
#: [0, 1] -- p = 1 is code 32767, as a symmetric int16 observer over [0, 1] gives it on PT2E's range
#: [-32767, 32767]; TFLite's 1/32768 would saturate p = 1 at 32767/32768.
SOFTMAX_GRID: dict[str, FixedGrid] = {
    "int8": FixedGrid(1.0 / 256.0, -128, -128, 127),
    "int16": FixedGrid(1.0 / 32767.0, 0, -32767, 32767),
}

#: Ops whose output grid is fixed by their range, input calibrated: packet name -> {IR dtype: grid}.
FIXED_OUTPUT: dict[str, dict[str, FixedGrid]] = {
    "aten.softmax": SOFTMAX_GRID,  # softmax.int (self, dim, dtype=None)
    "aten._softmax": SOFTMAX_GRID,  # after core-ATen decomposition (self, dim, half_to_float)
    "tabula.softmax": SOFTMAX_GRID,  # scaled, masked softmax (self, dim, scale, keep): decomposed attention
}

#: Ops rewritten before quantization (:mod:`tabula.quantizer.batch_norm`,
#: :mod:`tabula.quantizer.decompose_ops_pass`), so they reach PT2E as ops of the classes above:
#: packet name -> what they become.
REWRITTEN: dict[str, str] = {
    "aten.batch_norm": "folded into the preceding conv/linear, else a per-channel 1x1 depthwise conv (WEIGHTED)",
    "aten._native_batch_norm_legit_no_training": "as aten.batch_norm",
    "aten.lstm": "unrolled over the steps (tabula.quantizer.unroll_recurrent_pass): per step and gate a linear of "
                 "the input and of h (weights stored once), sigmoid / tanh TABLEs, mul / add; c and h on one grid "
                 "over every step",
    "aten.gru": "as aten.lstm (gates r, z, n; h = n + z * (h - n))",
    "aten.rnn_tanh": "as aten.lstm (one gate: h = tanh(linear(x) + linear(h)))",
    "aten.rnn_relu": "as aten.lstm (one gate: h = relu(linear(x) + linear(h)), the relu fused into the add)",
    "aten.scaled_dot_product_attention": "matmul(q, k^T), the scaled (masked) softmax tabula.softmax, matmul(p, v)",
    "aten.split": "one slice per piece",
    "aten.split_with_sizes": "one slice per piece",
    "aten.chunk": "one slice per piece",
    "aten.unbind": "one select per piece",
    "aten.stack": "unsqueeze each input, then cat",
    "aten.zeros_like": "a constant of the input's shape (folded)",
    "aten.ones_like": "a constant of the input's shape (folded)",
    "aten.full_like": "a constant of the input's shape (folded)",
    "aten.masked_fill": "where(mask, value, x): SELECT of the codes, the value one code on x's grid",
    "aten.glu": "the two halves (slices) along dim, sigmoid of the second (TABLE), mul",
    "aten.pixel_shuffle": "reshape [N, C, r, r, H, W], permute (0, 1, 4, 2, 5, 3), reshape [N, C, H r, W r]",
    "aten.pixel_unshuffle": "reshape [N, C, H, r, W, r], permute (0, 1, 3, 5, 2, 4), reshape [N, C r r, H, W]",
    "aten.log_softmax": "d = x - amax(x), d - log(sum(exp(d))) (keepdim): REDUCE_MAX, SUB, exp TABLE, int32 sum, "
                        "log TABLE, SUB",
    "aten._log_softmax": "as aten.log_softmax",
    "aten.group_norm": "layer_norm over x.view(N, G, -1)'s last dim, viewed back, * weight + bias per channel",
    "aten.linalg_vector_norm": "the 2-norm over dims: sqrt(sum(x * x)) (F.normalize: x * reciprocal(clamp(norm, eps)))",
    "aten.clamp_min": "clamp(x, min)",
    "aten.expand_as": "expand(x, y.shape)",
    "aten.prelu": "where(x > 0, x, x * a): a per channel (dim 1) or one, a constant; GT, MUL, SELECT",
    "aten._safe_softmax": "softmax (equal on finite inputs)",
    "aten.max": "max.dim: (amax, argmax) over the dim, each where read",
    "aten.min": "min.dim: (amin, argmin) over the dim, each where read",
    "aten.tril": "where(mask, x, 0) with the constant lower-triangle mask (SELECT)",
    "aten.triu": "where(mask, x, 0) with the constant upper-triangle mask (SELECT)",
    "aten.var": "mean((x - mean(x))^2) over the dims, * n / (n - correction): means, SUB, MUL, one RESCALE",
    "aten.addmm": "beta * b + alpha * (m1 @ m2): linear(m1, alpha * m2^T, beta * b) with m2 from constants, else mm, "
                  "mul, add",
    "aten.constant_pad_nd": "pad(x, pad, 'constant', value) (PAD)",
    "aten.copy": "dst.copy_(src): src, expanded to dst's shape",
    "aten.einsum": "permute / reshape each operand to 3-D, bmm (MATMUL), reshape / permute to the output (one or two "
                   "operands; an index of one operand only summed first)",
    "aten.cosine_similarity": "sum(a * rsqrt(clamp(sum(a * a), eps^2)) * b * rsqrt(...), dim): int32 sums, rsqrt "
                              "TABLE, MULs",
    "aten.max_pool2d_with_indices": "max_pool2d (the values; the indices unread)",
}

#: ``node.meta`` key set by the passes that unroll a recurrence (:mod:`tabula.quantizer.unroll_recurrent_pass`):
#: every node carrying the same value (``"<op>.l<layer>.<role>"``: a gate's pre-activation, the cell state
#: c, h, ...) gets one output grid, observed over every step -- so a state is never requantized between
#: steps, and every step is the same integer program.
STEP_GRID_KEY = "tabula_step_grid"
#: Products of two activations (TOSA MATMUL): packet name -> indices of the two operands.
MATMUL: dict[str, tuple[int, int]] = {
    "aten.matmul": (0, 1),
    "aten.bmm": (0, 1),
    "aten.mm": (0, 1),
}

#: Normalizations (an integer LayerNorm: :mod:`tabula.qmath.layer_norm`): packet name -> index of the
#: data input.  Input calibrated, output own (calibrated); weight and bias stay float constants.
NORMALIZE: dict[str, int] = {"aten.layer_norm": 0}

#: Activations that run in their producer's epilogue when they are its only user: the producer
#: takes the activation's output grid.  (hardtanh/clamp only with constant bounds.)
FUSED_ACTIVATIONS: frozenset[str] = frozenset({"aten.relu", "aten.relu6", "aten.hardtanh", "aten.clamp"})

#: Producers that fuse a following activation (their lowering ends in a RESCALE to the output).
#: (An arithmetic op's lowering writes its output grid whatever it is: sub and mul as add.)
FUSING_PRODUCERS: frozenset[str] = frozenset({"aten.conv2d", "aten.conv1d", "aten.linear", "aten.add", "aten.sub",
                                              "aten.mul", "aten.matmul", "aten.bmm", "aten.mm", "aten.conv_transpose2d"})

#: Graph nodes that carry no computation and need no rule.
IGNORED: frozenset[str] = IDENTITY | ASSERTS

#: Structural nodes (tuple indexing of a multi-output op): never reported as the unsupported op
#: themselves -- the op that produced the tuple is.
STRUCTURAL: frozenset[str] = frozenset({"_operator.getitem"})


_CLASS_OF: dict[str, OpClass] = {
    **{n: OpClass.WEIGHTED for n in WEIGHTED},
    **{n: OpClass.TABLE for n in TABLE},
    **{n: OpClass.SHARED for n in SHARED},
    **{n: OpClass.JOINING for n in JOINING},
    **{n: OpClass.ARITHMETIC for n in ARITHMETIC},
    **{n: OpClass.FIXED_OUTPUT for n in FIXED_OUTPUT},
    **{n: OpClass.MATMUL for n in MATMUL},
    **{n: OpClass.NORMALIZE for n in NORMALIZE},
    **{n: OpClass.JOINING for n in JOINING_ARGS},
    **{n: OpClass.COMPARISON for n in COMPARISON},
    **{n: OpClass.INDEX for n in INDEX},
    **{n: OpClass.MASK for n in MASK},
}


def op_class(target: object) -> OpClass | None:
    """The :class:`OpClass` of a node target after in-place resolution, or ``None`` if unsupported."""
    return _CLASS_OF.get(canonical_op(target))


def is_identity(node) -> bool:
    """``node`` (an FX node) is an :data:`IDENTITY` op that returns its first argument's value: any
    of them but ``_to_copy`` / ``to``, which are one only when the dtype does not change."""
    name = canonical_op(node.target)
    if name not in IDENTITY or not node.args:
        return False
    if name in ("aten._to_copy", "aten.to"):
        src = getattr(node.args[0], "meta", {}).get("val")
        out = node.meta.get("val")
        return src is not None and out is not None and getattr(src, "dtype", None) == getattr(out, "dtype", 0)
    return True


def supported_ops() -> list[str]:
    """Every aten op name the rules table covers, sorted."""
    return sorted(_CLASS_OF)


def fused_activation(node: Node) -> Node | None:
    """The activation node fused into ``node``'s epilogue, or ``None``.

    ``node`` (an FX node) must be a :data:`FUSING_PRODUCERS` op whose only user is a
    :data:`FUSED_ACTIVATIONS` op reading it as its data input, with constant (non-tensor) bounds.
    The annotator gives such a producer no output grid and the activation its own; the lowering
    then finds the producer feeding the activation directly (no quantize between them)."""
    if getattr(node, "op", None) != "call_function" or canonical_op(node.target) not in FUSING_PRODUCERS:
        return None
    users = list(node.users)
    if len(users) != 1:
        return None
    act = users[0]
    if act.op != "call_function" or canonical_op(act.target) not in FUSED_ACTIVATIONS:
        return None
    if not act.args or act.args[0] is not node:
        return None
    if any(isinstance(a, Node) for a in list(act.args[1:]) + list(act.kwargs.values())):
        return None
    return act
