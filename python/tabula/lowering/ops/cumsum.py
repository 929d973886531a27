"""aten.cumsum(x, dim) -> FULLY_CONNECTED with a constant lower-triangular matrix of ones, and one RESCALE.

``y[..., i] = sum_{j <= i} x[..., j]`` (PyTorch's cumsum) is, per row of the last dim, the product with
``W[i, j] = 1 for j <= i`` (int8 weights, weight scale 1): the int32 (int16 input: int48) accumulator holds
the exact sum of the codes ``x - zp`` of the prefix (int48 moved to int32 by an exact RESCALE x1), and the
per-tensor RESCALE by ``s_in / s_out`` to the output's own calibrated grid (``rules.AVERAGING``, as ``sum``)
rounds once, half up: within 1/2 output LSB (+ 2^-31 relative, the multiplier) of the exact prefix sums of
the dequantized input.  ``L^2`` MACs per row of length L (TOSA 1.0 has no scan
operator); rows longer than :data:`MAX_LEN` are refused up front.  The last dim of a 1-D to 3-D tensor
(a RESHAPE to rows; a TRANSPOSE first for another dim of a 2-D or 3-D tensor)."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes
from ...fx import arg, fake_value, node_source
from ...ir import Op

ATEN = ["aten.cumsum"]

#: The longest row cumsum takes (L^2 MACs per row: 1,048,576 at 1,024).
MAX_LEN = 1024


def unsupported(node) -> str | None:
    """Why this cumsum cannot be lowered (listed before calibration), or None."""
    v = fake_value(node.args[0])
    if arg(node, 2, "dtype", None) is not None:
        return "with dtype= (leave it unset)"
    if v is None:
        return None
    if v.dim() == 0 or v.dim() > 3:
        return f"of a {v.dim()}-D tensor (1-D to 3-D: a 4-D one is NHWC on the device)"
    n = int(v.shape[int(node.args[1]) % v.dim()])
    if n > MAX_LEN:
        return f"over {n} elements (at most {MAX_LEN}: L^2 MACs per row)"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    rank = len(x.shape)
    dim = int(node.args[1]) % rank
    cur, last = x, out
    if dim != rank - 1:  # move dim last
        perm = [d for d in range(rank) if d != dim] + [dim]
        t = ctx.temp(f"{node.name}_moved", tuple(x.shape[d] for d in perm), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("TRANSPOSE", [x.name], [t.name], {"perms": perm}, src))
        cur = t
        last = ctx.temp(f"{node.name}_moved_out", t.shape, out.dtype, out.scale, out.zero_point)
    n = cur.shape[-1]
    rows = math.prod(cur.shape[:-1])
    x2 = ctx.temp(f"{node.name}_rows", (rows, n), x.dtype, x.scale, x.zero_point)
    ctx.graph.add_op(Op("RESHAPE", [cur.name], [x2.name], {"shape": [rows, n]}, src))
    acc_dtype = dtypes.ACC_DTYPE[x.dtype]
    ones = [1.0] * n
    w = ctx.const(f"{node.name}_prefix", np.tril(np.ones((n, n), np.int64)), "int8", ones)
    b = ctx.const(f"{node.name}_bias", np.zeros(n, np.int64), acc_dtype, [float(x.scale)] * n)
    acc = ctx.temp(f"{node.name}_acc", (rows, n), acc_dtype, float(x.scale))
    ctx.graph.add_op(Op("FULLY_CONNECTED", [x2.name, w.name, b.name], [acc.name],
                        {"input_zp": int(x.zero_point), "weight_zp": 0}, src))
    y2 = ctx.temp(f"{node.name}_rows_out", (rows, n), out.dtype, out.scale, out.zero_point)
    if acc_dtype == "int48":  # an int48 RESCALE has a 16-bit multiplier: first to int32, exactly (x1;
        # |sum| <= 32768 * MAX_LEN < 2^26), so the one rounding gets the 31-bit multiplier
        acc32 = ctx.temp(f"{node.name}_acc32", (rows, n), "int32", float(x.scale))
        ctx.rescale(acc, acc32, src, scale=1.0)
        acc = acc32
    ctx.rescale(acc, y2, src)
    if last is out:
        ctx.graph.add_op(Op("RESHAPE", [y2.name], [out.name], {"shape": list(out.shape)}, src))
        return
    ctx.graph.add_op(Op("RESHAPE", [y2.name], [last.name], {"shape": list(last.shape)}, src))
    perm = [d for d in range(rank) if d != dim] + [dim]
    inv = [perm.index(d) for d in range(rank)]
    ctx.graph.add_op(Op("TRANSPOSE", [last.name], [out.name], {"perms": inv}, src))
