"""IR pass: prove at build time that every integer sum fits its accumulator -- make it fit, or refuse
by name.  Never a wrap (DESIGN: "integer ranges are proven at build time").

Bounds use the whole range of each input's dtype (inside the program a tensor may hold any code of
its dtype), ``xmax = max(zp - qmin, qmax - zp)``:

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

__all__ = ["bound_accumulators", "input_reach"]

#: How far (output LSB, worst case) rescaling a channel may move the output before it is refused.
MAX_RESCALE_ERROR_LSB = 0.5


def input_reach(t: Tensor, zero_point: int) -> int:
    """``max |x - zero_point|`` over every code ``x`` of ``t``'s dtype."""
    lo, hi = dtypes.range_of(t.dtype)
    return max(zero_point - lo, hi - zero_point)


def bound_accumulators(g: Graph) -> None:
    """Check (and where needed fix) every CONV2D, DEPTHWISE_CONV2D, FULLY_CONNECTED, MATMUL and AVG_POOL2D of ``g`` in
    place; see the module docstring.  Raises :class:`LoweringError` naming the op's source."""
    i = 0
    while i < len(g.ops):
        op = g.ops[i]
        if op.op in ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED"):
            _weighted(g, op)
        elif op.op == "MATMUL":
            _matmul(g, op)
        elif op.op == "AVG_POOL2D":
            replacement = _avg_pool(g, op)
            if replacement:
                g.ops[i : i + 1] = replacement
                i += len(replacement) - 1
        i += 1


# ---- CONV2D / FULLY_CONNECTED -----------------------------------------------------------------------
def _weighted(g: Graph, op: Op) -> None:
    x, w, b = (g.tensors[n] for n in op.inputs)
    acc = g.tensors[op.outputs[0]]
    acc_dtype = dtypes.ACC_DTYPE[x.dtype]
    hi = dtypes.range_of(acc_dtype)[1]
    xmax = input_reach(x, int(op.attrs.get("input_zp", 0)))
    wzp = int(op.attrs.get("weight_zp", 0))
    depthwise = op.op == "DEPTHWISE_CONV2D"  # weights [KH, KW, C, M]: output channel c*M + m is the last axes
    raw = g.constants[w.name].astype(np.int64)
    wq = raw.reshape(-1, w.shape[-2] * w.shape[-1]).T if depthwise else raw.reshape(w.shape[0], -1)  # [Cout, taps]
    cout = wq.shape[0]
    bias = g.constants[b.name].astype(np.int64)
    bound = xmax * np.abs(wq - wzp).sum(axis=1) + np.abs(bias)
    bad = np.flatnonzero(bound > hi)
    if bad.size:
        if wzp != 0:
            raise LoweringError(f"{op.op} ({op.source}): accumulator of output channels {bad.tolist()} can reach "
                                f"{int(bound.max())}, beyond {acc_dtype}; rescaling needs weight_zp 0")
        rescale = _find_rescale(g, acc.name, op)
        out = g.tensors[rescale.outputs[0]]
        wq, bias = wq.copy(), bias.copy()
        w_scale, acc_scale = list(_as_list(w.scale, cout)), list(_as_list(acc.scale, cout))
        for c in bad.tolist():
            k = 1
            while True:
                w2 = np.rint(wq[c] / 2.0**k).astype(np.int64)
                b2 = int(np.rint(bias[c] / 2.0**k))
                if xmax * int(np.abs(w2).sum()) + abs(b2) <= hi:
                    break
                k += 1
            err = (xmax * float(np.abs(w2 * 2**k - wq[c]).sum()) + abs(b2 * 2**k - int(bias[c]))) \
                * float(acc_scale[c]) / float(out.scale)
            if err > MAX_RESCALE_ERROR_LSB:
                raise LoweringError(
                    f"{op.op} ({op.source}): the {acc_dtype} accumulator of output channel {c} can reach "
                    f"{int(bound[c])} (bias {int(bias[c])} LSB, weights {int(np.abs(wq[c]).sum())} x input reach "
                    f"{xmax}); fitting it would move that output by up to {err:.2g} LSB. The bias is far larger "
                    "than the channel's weights can reach: check them (retrain, or remove the channel), or quantize "
                    "with scheme='a16w8' (48-bit accumulators)")
            wq[c], bias[c] = w2, b2
            w_scale[c] *= 2.0**k
            acc_scale[c] *= 2.0**k
        w = _writable(g, op, 1, w)
        g.constants[w.name] = (wq.T if depthwise else wq).reshape(w.shape).astype(np.int8)
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


# ---- MATMUL -------------------------------------------------------------------------------------
def _matmul(g: Graph, op: Op) -> None:
    a, b = (g.tensors[n] for n in op.inputs)
    acc_dtype = dtypes.ACC_DTYPE[a.dtype]
    reach = a.shape[-1] * input_reach(a, int(op.attrs.get("a_zp", 0))) * input_reach(b, int(op.attrs.get("b_zp", 0)))
    if reach > dtypes.range_of(acc_dtype)[1]:
        raise LoweringError(f"MATMUL ({op.source}): a sum over C = {a.shape[-1]} products can reach {reach}, beyond the "
                            f"{acc_dtype} accumulator; shorten the reduced dimension (split the matmul and add the "
                            "parts) or use scheme='a16w8'")


# ---- AVG_POOL2D ---------------------------------------------------------------------------------
def _avg_pool(g: Graph, op: Op) -> list[Op] | None:
    x = g.tensors[op.inputs[0]]
    a = op.attrs
    (kh, kw), stride, pad = a["kernel"], list(a["stride"]), list(a["pad"])
    hi = dtypes.range_of("int32")[1]
    xmax = input_reach(x, int(a.get("input_zp", 0)))
    if kh * kw * xmax <= hi:
        return None
    taps = hi // xmax  # most taps one int32 sum can hold
    split = None
    if stride == [kh, kw] and not any(pad):
        options = [(a1 * b1, a1, b1) for a1 in _divisors(kh) for b1 in _divisors(kw)
                   if a1 * b1 <= taps and (kh // a1) * (kw // b1) <= taps]
        split = max(options, default=None)
    if split is None:
        raise LoweringError(
            f"AVG_POOL2D ({op.source}): a {kh}x{kw} window sums up to {kh * kw * xmax}, beyond int32, and cannot be "
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
