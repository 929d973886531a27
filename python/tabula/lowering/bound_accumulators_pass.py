"""IR pass: prove at build time that every integer sum fits its accumulator -- make it fit, or refuse
by name.  Never a wrap (DESIGN: "integer ranges are proven at build time").

Each bound is the op's own fact: its spec's ``bound`` (:mod:`tabula.reference.ops`; ``bound = None``
for an op without an accumulator); this pass keeps the legalisation -- rescaling a channel, splitting a
pool, refusing by name.  Bounds use the whole range of each input's dtype (inside the program a tensor
may hold any code of its dtype), ``xmax = max(zp - qmin, qmax - zp)``:

* **CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED**, per output channel ``c``:
  ``|acc[c]| <= xmax * sum_k |w[c,k] - weight_zp| + |bias[c]|`` must fit the accumulator (int32 for
  int8 inputs, int48 for int16; TOSA 1.0).  A channel that does not -- typically a bias that is huge
  in accumulator LSB because the channel's weights are all zero (a pruned row: its weight scale is the
  observer's epsilon) or tiny -- is rescaled: its weights and bias are divided by ``2^k`` (round half
  to even) and its weight and accumulator scales multiplied by ``2^k``, for the smallest ``k`` that
  fits, and the RESCALE after it is recomputed.  That is exact for an all-zero row; otherwise the
  worst-case change of the output, ``(xmax * sum_k |dw_k| + |db|) * acc_scale[c] / out_scale``, must
  stay within half an output LSB or the pass raises a LoweringError naming the layer.  A weight tensor
  another op reads too (a shared module) is copied before it is changed.
* **MATMUL**: ``|acc| <= C * max|a - a_zp| * max|b - b_zp|``; LoweringError when it does not fit.
* **AVG_POOL2D**: the int32 sum, ``|acc| <= kh * kw * xmax``.  A pool whose windows tile the input
  (stride == kernel, no padding: every global and adaptive average pool) and whose sum does not fit
  is split into two AVG_POOL2D with kernels ``k1 * k2 = kernel`` per axis, each sum fitting (the result
  differs from one exact average by at most one output LSB: two roundings); any other is a
  LoweringError naming the layer.  (An int16 global pool overflows from 65,536 taps, e.g. 256x256.)

Runs in :data:`tabula.lowering.pipeline.PASSES`, after node lowering and before :func:`tabula.ir.verify`
(the lowering stores a bias that does not fit the accumulator in the wide ``int48`` holder for this
pass to legalize).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import LoweringError
from ..ir import Graph, Op, Tensor
from ..qmath import quantize_multiplier, quantize_multiplier_16
from ..reference._checks import AccBound, TType
from ..reference._checks import input_reach as _reach
from ..reference.ops import specs

__all__ = ["bound_accumulators", "input_reach"]

#: How far (output LSB, worst case) rescaling a channel may move the output before it is refused.
MAX_RESCALE_ERROR_LSB = 0.5


def input_reach(t: Tensor, zero_point: int) -> int:
    """``max |x - zero_point|`` over every code ``x`` of ``t``'s dtype."""
    return _reach(t.dtype, zero_point)


def _bound(g: Graph, op: Op, values: dict[int, np.ndarray] | None = None) -> AccBound:
    """The op's spec's accumulator bound on its inputs' types, with the graph's constants (or ``values``
    in their place, by input index)."""
    ins = [TType(tuple(g.tensors[n].shape), g.tensors[n].dtype) for n in op.inputs]
    vals = [g.constants.get(n) for n in op.inputs]
    for i, v in (values or {}).items():
        vals[i] = v
    return specs()[op.op].bound(ins, op.attrs, vals)


def bound_accumulators(g: Graph) -> None:
    """Check (and where needed fix) every op of ``g`` whose spec declares an accumulator ``bound`` (CONV2D,
    DEPTHWISE_CONV2D, FULLY_CONNECTED, MATMUL, AVG_POOL2D), in place; see the module docstring.  Raises
    :class:`LoweringError` naming the op's source."""
    table = specs()
    i = 0
    while i < len(g.ops):
        op = g.ops[i]
        if getattr(table.get(op.op), "bound", None) is not None:
            replacement = _LEGALIZE.get(op.op, _refuse)(g, op)
            if replacement:
                g.ops[i : i + 1] = replacement
                i += len(replacement) - 1
        i += 1


def _refuse(g: Graph, op: Op) -> None:
    """An op with no way to make its sum fit: refused when it does not."""
    b = _bound(g, op)
    if b.over().size:
        raise LoweringError(f"{op.op} ({op.source}): its sum can reach {int(b.reach.max())}, beyond the {b.dtype} "
                            "accumulator")


# ---- CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED: rescale a channel ----------------------------------
def _weighted(g: Graph, op: Op) -> None:
    x, w, b = (g.tensors[n] for n in op.inputs)
    acc = g.tensors[op.outputs[0]]
    spec = specs()[op.op]
    found = _bound(g, op)
    acc_dtype, hi = found.dtype, dtypes.range_of(found.dtype)[1]
    xmax = input_reach(x, int(op.attrs.get("input_zp", 0)))
    wzp = int(op.attrs.get("weight_zp", 0))
    raw = g.constants[w.name].astype(np.int64)
    # the flat index in w of each weight of each output channel: [Cout, taps] (the spec's layout)
    where = spec.channel_rows(np.arange(raw.size).reshape(raw.shape))
    cout = where.shape[0]
    bias = g.constants[b.name].astype(np.int64)
    bound = found.reach
    bad = found.over()
    if bad.size:
        if wzp != 0:
            raise LoweringError(f"{op.op} ({op.source}): accumulator of output channels {bad.tolist()} can reach "
                                f"{int(bound.max())}, beyond {acc_dtype}; rescaling needs weight_zp 0")
        rescale = _find_rescale(g, acc.name, op)
        out = g.tensors[rescale.outputs[0]]
        flat = raw.reshape(-1)
        w_scale, acc_scale = list(_as_list(w.scale, cout)), list(_as_list(acc.scale, cout))
        # the smallest k per bad channel for which the channel's weights and bias divided by 2^k fit
        ks, new_w, new_b = {}, flat.copy(), bias.copy()
        k, pending = 1, bad
        while pending.size:
            cand_w, cand_b = flat.copy(), bias.copy()
            cand_w[where[pending]] = np.rint(flat[where[pending]] / 2.0**k).astype(np.int64)
            cand_b[pending] = np.rint(bias[pending] / 2.0**k).astype(np.int64)
            fits = _bound(g, op, {1: cand_w.reshape(raw.shape), 2: cand_b}).reach[pending] <= hi
            for c in pending[fits].tolist():
                ks[c] = k
                new_w[where[c]], new_b[c] = cand_w[where[c]], cand_b[c]
            pending, k = pending[~fits], k + 1
        # the worst-case change of each rescaled channel's accumulator: the bound of (new * 2^k - old)
        dw, db = np.zeros_like(flat), np.zeros_like(bias)
        for c, kc in ks.items():
            dw[where[c]] = new_w[where[c]] * 2**kc - flat[where[c]]
            db[c] = new_b[c] * 2**kc - bias[c]
        moved = _bound(g, op, {1: dw.reshape(raw.shape), 2: db}).reach
        for c in bad.tolist():
            err = float(moved[c]) * float(acc_scale[c]) / float(out.scale)
            if err > MAX_RESCALE_ERROR_LSB:
                raise LoweringError(
                    f"{op.op} ({op.source}): the {acc_dtype} accumulator of output channel {c} can reach "
                    f"{int(bound[c])} (bias {int(bias[c])} LSB, weights {int(np.abs(flat[where[c]]).sum())} x input "
                    f"reach {xmax}); fitting it would move that output by up to {err:.2g} LSB. The bias is far larger "
                    "than the channel's weights can reach: check them (retrain, or remove the channel), or quantize "
                    "with scheme='a16w8' (48-bit accumulators)")
            w_scale[c] *= 2.0 ** ks[c]
            acc_scale[c] *= 2.0 ** ks[c]
        bias = new_b
        w = _writable(g, op, 1, w)
        g.constants[w.name] = new_w.reshape(w.shape).astype(np.int8)
        w.scale = w_scale
        b = _writable(g, op, 2, b)
        b.scale = list(acc_scale)
        acc.scale = list(acc_scale)
        _recompute_rescale(rescale, acc, out)
    if b.dtype != acc_dtype:  # the lowering's wide holder: every code fits the accumulator dtype now
        b = _writable(g, op, 2, b)
        b.dtype = acc_dtype
    g.constants[b.name] = bias.astype(b.np_dtype)


def _as_list(scale, n: int) -> list[float]:
    return [float(s) for s in scale] if isinstance(scale, (list, tuple)) else [float(scale)] * n


def _find_rescale(g: Graph, name: str, op: Op) -> Op:
    users = [o for o in g.ops if name in o.inputs]
    if len(users) != 1 or users[0].op != "RESCALE":
        raise LoweringError(f"{op.op} ({op.source}): its accumulator must feed exactly one RESCALE to be rescaled")
    return users[0]


def _writable(g: Graph, op: Op, index: int, t: Tensor) -> Tensor:
    """``t`` (input ``index`` of ``op``), or a copy of it when another op reads it too."""
    if sum(n == t.name for o in g.ops for n in o.inputs) == 1:
        return t
    name, i = f"{t.name}_{op.outputs[0]}", 1
    while name in g.tensors:
        name, i = f"{t.name}_{op.outputs[0]}_{i}", i + 1
    copy = Tensor(name, t.shape, t.dtype, list(t.scale) if isinstance(t.scale, list) else t.scale, t.zero_point)
    g.add_tensor(copy, g.constants[t.name].copy())
    op.inputs[index] = name
    return copy


def _recompute_rescale(rescale: Op, acc: Tensor, out: Tensor) -> None:
    """Multipliers and shifts of ``rescale`` (``acc -> out``) for ``acc``'s per-channel scales, as
    :meth:`tabula.lowering.pipeline.LoweringContext.rescale` computes them."""
    qm = quantize_multiplier if acc.dtype != "int48" else quantize_multiplier_16
    pairs = [qm(float(s) / float(out.scale)) for s in acc.scale]
    if len(set(pairs)) == 1:
        pairs = pairs[:1]
    rescale.attrs["multiplier"] = [m for m, _ in pairs]
    rescale.attrs["shift"] = [s for _, s in pairs]


# ---- MATMUL: refused when it does not fit ----------------------------------------------------------
def _matmul(g: Graph, op: Op) -> None:
    b = _bound(g, op)
    if b.over().size:
        c = g.tensors[op.inputs[0]].shape[-1]
        raise LoweringError(f"MATMUL ({op.source}): a sum over C = {c} products can reach {int(b.reach[0])}, beyond the "
                            f"{b.dtype} accumulator; shorten the reduced dimension (split the matmul and add the "
                            "parts) or use scheme='a16w8'")


# ---- AVG_POOL2D: split a pool ------------------------------------------------------------------------
def _avg_pool(g: Graph, op: Op) -> list[Op] | None:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    (kh, kw), stride, pad = a["kernel"], list(a["stride"]), list(a["pad"])
    found = _bound(g, op)
    if not found.over().size:
        return None

    def fits(k1: int, k2: int) -> bool:  # a k1 x k2 window of this pool's input sums within the accumulator
        return not _bound(g, Op(op.op, op.inputs, op.outputs, {**a, "kernel": [k1, k2]})).over().size

    split = None
    if stride == [kh, kw] and not any(pad):
        options = [(a1 * b1, a1, b1) for a1 in _divisors(kh) for b1 in _divisors(kw)
                   if fits(a1, b1) and fits(kh // a1, kw // b1)]
        split = max(options, default=None)
    if split is None:
        raise LoweringError(
            f"AVG_POOL2D ({op.source}): a {kh}x{kw} window sums up to {int(found.reach[0])}, beyond int32, and cannot be "
            "split into two pools (that needs stride == kernel, no padding and a kernel with factors); use smaller "
            "windows (pool in stages) or int8 activations")
    _, a1, b1 = split
    n, h, w, c = x.shape
    mid_shape = (n, (h - a1) // a1 + 1, (w - b1) // b1 + 1, c)
    name, i = f"{op.outputs[0]}_part", 1
    while name in g.tensors:
        name, i = f"{op.outputs[0]}_part_{i}", i + 1
    g.add_tensor(Tensor(name, mid_shape, x.dtype, x.scale, x.zero_point))
    zps = {"input_zp": int(a.get("input_zp", 0)), "output_zp": int(a.get("output_zp", 0))}
    src = f"{op.source} (split {kh}x{kw} = {a1}x{b1} then {kh // a1}x{kw // b1}: the int32 sum must fit)"
    first = Op("AVG_POOL2D", [x.name], [name], {"kernel": [a1, b1], "stride": [a1, b1], "pad": [0, 0, 0, 0], **zps}, src)
    second = Op("AVG_POOL2D", [name], list(op.outputs),
                {"kernel": [kh // a1, kw // b1], "stride": [kh // a1, kw // b1], "pad": [0, 0, 0, 0],
                 "input_zp": zps["output_zp"], "output_zp": zps["output_zp"]}, src)
    return [first, second]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


#: How each op whose spec declares a bound is made to fit (ops not listed are refused when they do not).
_LEGALIZE = {"CONV2D": _weighted, "DEPTHWISE_CONV2D": _weighted, "FULLY_CONNECTED": _weighted,
             "TRANSPOSE_CONV2D": _weighted, "MATMUL": _matmul,
             "AVG_POOL2D": _avg_pool}
