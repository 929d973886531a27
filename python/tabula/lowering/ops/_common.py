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


def weighted(ctx, node, x, out, w_q: np.ndarray, w_scale: np.ndarray, w_layout: np.ndarray, op_name: str, attrs: dict,
             channels: slice = slice(None)):
    """Emit ``op_name`` (CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED) into an accumulator and the
    per-channel RESCALE to ``out``.  The bias is the PT2E int32 constant (int8 scheme) or the float bias
    quantized here at ``s_in * s_w[c]`` to the accumulator dtype (int48 for int16 activations, round
    half to even).  ``w_q`` / ``w_scale`` are the output channels ``channels`` of the node's weight
    (one group of a grouped conv); the bias is sliced to them."""
    src = node_source(node)
    acc_dtype = dtypes.ACC_DTYPE[x.dtype]
    acc_scale = float(x.scale) * w_scale  # [Cout], float64
    w = ctx.const(f"{node.name}_weight", w_layout, "int8", w_scale.tolist())
    b_node = arg(node, 2, "bias", None)
    cout = w_q.shape[0]
    if b_node is None:
        bias = np.zeros(cout, np.int64)
    elif is_dequantize_per_channel(b_node):
        bias = ctx.per_channel_const(b_node, node)[0].astype(np.int64)[channels]
    else:
        bf = ctx.float_const(b_node, node).astype(np.float64)[channels]
        if not np.isfinite(bf).all():
            raise LoweringError(f"{src}: bias contains NaN or Inf")
        bias = np.rint(bf / acc_scale).astype(np.int64)
        lo, hi = dtypes.range_of(acc_dtype)
        if bias.size and (bias.min() < lo or bias.max() > hi):
            raise LoweringError(f"{src}: quantized bias exceeds {acc_dtype}; the weights or input scale are too small")
    b = ctx.const(f"{node.name}_bias", bias, acc_dtype, acc_scale.tolist())
    acc = ctx.temp(f"{node.name}_acc", out.shape, acc_dtype, acc_scale.tolist())
    ctx.graph.add_op(Op(op_name, [x.name, w.name, b.name], [acc.name], {**attrs, "input_zp": int(x.zero_point), "weight_zp": 0}, src))
    ctx.rescale(acc, out, src, in_scales=acc_scale)
