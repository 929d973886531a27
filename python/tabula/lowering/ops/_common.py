"""Helpers shared by the op lowerings: argument defaults, layouts, weights and biases."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...errors import LoweringError
from ...fx import arg, is_dequantize_per_channel, node_source
from ...ir import Op

#: NCHW dim -> NHWC axis of a 4-D activation.
NCHW_TO_NHWC_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}


def pair(v, default) -> list[int]:
    """A PyTorch int-or-list 2-D argument (stride, padding, ...) as ``[a, b]``."""
    if v is None:
        v = default
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    return v * 2 if len(v) == 1 else v


def device_axis(dim: int, rank: int) -> int:
    """The IR axis of PyTorch dim ``dim`` (negative allowed) of a rank-``rank`` activation."""
    d = dim % rank
    return NCHW_TO_NHWC_AXIS[d] if rank == 4 else d


#: Largest |bias code| the lowering stores for the accumulator pass to legalize (int64 storage).
_BIAS_LIMIT = 2**62


def weighted(ctx, node, x, out, w_q: np.ndarray, w_scale: np.ndarray, w_layout: np.ndarray, op_name: str, attrs: dict,
             channels: slice = slice(None)):
    """Emit ``op_name`` (CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED) into an accumulator and the
    per-channel RESCALE to ``out``.  ``w_q`` / ``w_scale`` are the output channels ``channels`` of the
    node's weight (one group of a grouped conv); the bias is sliced to them.

    The weights are one constant however often the module is called (:meth:`LoweringContext.const`
    stores identical constants once).  The bias is quantized here, for this call, from the float
    bias at ``s_in * s_w[c]`` with this call's input scale ``s_in`` (round half to even) -- a shared
    module's calls differ in ``s_in`` -- to the accumulator dtype (int32 for int8 inputs, int48 for
    int16).  A bias PT2E quantized itself (behind ``dequantize_per_channel``) is used as it is when
    its scale is this call's, else requantized from its real value.  A bias code outside the
    accumulator dtype is stored in the wider int48 holder for
    :mod:`tabula.lowering.bound_accumulators_pass`, which rescales that output channel (or raises).

    Raises:
        LoweringError: a NaN/Inf bias, or a bias beyond 2^62 accumulator LSB (naming the layer).
    """
    src = node_source(node)
    acc_dtype = dtypes.ACC_DTYPE[x.dtype]
    acc_scale = float(x.scale) * w_scale  # [Cout], float64
    w = ctx.const(f"{node.name}_weight", w_layout, "int8", w_scale.tolist())
    b_node = arg(node, 2, "bias", None)
    cout = w_q.shape[0]
    if b_node is None:
        bias = np.zeros(cout, np.int64)
    elif is_dequantize_per_channel(b_node):
        data, b_scale = ctx.per_channel_const(b_node, node)
        data, b_scale = data[channels], np.asarray(b_scale)[channels]
        if np.allclose(b_scale, acc_scale, rtol=1e-6, atol=0.0):
            bias = data.astype(np.int64)
        else:  # quantized at another scale (e.g. a shared module's first call): requantize
            bias = _quantize_bias(src, data.astype(np.float64) * b_scale, acc_scale)
    else:
        bias = _quantize_bias(src, ctx.float_const(b_node, node).astype(np.float64)[channels], acc_scale)
    lo, hi = dtypes.range_of(acc_dtype)
    holder = acc_dtype if not bias.size or (bias.min() >= lo and bias.max() <= hi) else "int48"
    b = ctx.const(f"{node.name}_bias", bias, holder, acc_scale.tolist())
    acc = ctx.temp(f"{node.name}_acc", out.shape, acc_dtype, acc_scale.tolist())
    ctx.graph.add_op(Op(op_name, [x.name, w.name, b.name], [acc.name], {**attrs, "input_zp": int(x.zero_point), "weight_zp": 0}, src))
    ctx.rescale(acc, out, src, in_scales=acc_scale)


def _quantize_bias(src: str, bias: np.ndarray, acc_scale: np.ndarray) -> np.ndarray:
    """``rint(bias / acc_scale)`` (half to even) as int64; LoweringError for NaN/Inf or a code beyond 2^62."""
    if not np.isfinite(bias).all():
        raise LoweringError(f"{src}: bias contains NaN or Inf")
    q = np.rint(bias / acc_scale)
    if q.size and np.abs(q).max() >= _BIAS_LIMIT:
        c = int(np.abs(q).argmax())
        raise LoweringError(f"{src}: bias {bias[c]:g} of output channel {c} is {abs(q[c]):.3g} accumulator LSB "
                            f"(input scale x weight scale = {acc_scale[c]:.3g}): no integer accumulator holds it; "
                            "check the weights of that channel (all zero or tiny) and the bias")
    return q.astype(np.int64)
