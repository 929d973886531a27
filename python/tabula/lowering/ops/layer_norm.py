"""aten.layer_norm -> an integer LayerNorm of TOSA ops (``rules.NORMALIZE``; the plan and its proofs:
:mod:`tabula.qmath.layer_norm`).

The normalized dims (the trailing ``len(normalized_shape)``, merged into one row of ``C`` by a RESHAPE)
are the last IR axis: inputs of rank 2 and 3 (a 4-D NCHW input, whose last dim is not contiguous in
NHWC, is listed up front).  Per row, ``R`` the row shape (the axis reduced to 1)::

    X = RESCALE(x, x1, -zp) int32        S = REDUCE_SUM(X)           D = SUB(MUL(X, C), S)     (C (x - mean))
    W = REDUCE_SUM(MUL(D, D, >> b))      W' = ADD(W, E)                                       (C^3 var / 2^b)
    r = -REDUCE_MAX(CONCAT(RESCALE(TABLE(RESCALE(W', 2^-14)), 2^-6), RESCALE(TABLE(RESCALE(W')), 2^-6)))
    newton x N:  r = RESCALE(ADD(r, INTDIV(W', r)), 2^-1)                                    (~ sqrt(W'))
    R = INTDIV(ADD(2^30, RESCALE(r, 2^-1)), r)                                                (~ 2^30 / sqrt(W'))
    y = RESCALE(ADD(MUL(MUL(D, R, >> s1), G, >> s2), B), 2^-f) + zp_y

with ``G``, ``B`` the affine weight and bias folded with the scales.  Every op is TOSA 1.0 (CONCAT,
REDUCE_MAX, TABLE int16, INTDIV, MUL with shift, RESCALE), so the TOSA export and the reference model
check it; the C runs it op by op with the existing kernels.  The first op carries
``attrs["layer_norm"]``: ``row_len``, the plan's shifts and its error bound in output LSB for rows of
standard deviation 4, 16 and 64 input codes.
"""
from __future__ import annotations

import numpy as np

from ...errors import LoweringError
from ...fx import arg, fake_value, node_source
from ...ir import Op
from ...qmath import QuantizationError
from ...qmath.layer_norm import COARSE, INV_ONE, build_layer_norm_plan, seed_tables

ATEN = ["aten.layer_norm"]


def unsupported(node) -> str | None:
    """Why this captured layer_norm cannot be lowered (listed before calibration), or None."""
    x = fake_value(node.args[0])
    if x is not None and x.dim() == 4:
        return "on a 4-D input (normalize a [N, T, C] or [N, C] tensor: the last dim of NCHW is not contiguous on the device)"
    if x is not None and x.dim() < 1 + len(node.args[1]):
        return f"over all {x.dim()} dims (the batch dim must stay out of normalized_shape)"
    for i, key in ((2, "weight"), (3, "bias")):
        w = arg(node, i, key, None)
        if w is not None and getattr(w, "op", None) != "get_attr":
            return f"whose {key} is not a constant"
    return None


def lower(ctx, node) -> None:
    src = node_source(node)
    x = ctx.input(node.args[0], node)
    out = ctx.output(node)
    if len(x.shape) == 4:
        raise LoweringError(f"{src}: layer_norm on a 4-D input is not supported")
    k = len(node.args[1])
    c = int(np.prod(x.shape[len(x.shape) - k:], dtype=np.int64))
    shape = tuple(x.shape[: len(x.shape) - k]) + (c,)
    w, b = arg(node, 2, "weight", None), arg(node, 3, "bias", None)
    gamma = None if w is None else ctx.float_const(w, node).astype(np.float64).reshape(-1)
    beta = None if b is None else ctx.float_const(b, node).astype(np.float64).reshape(-1)
    try:
        plan = build_layer_norm_plan(c, float(x.scale), x.dtype, float(arg(node, 4, "eps", 1e-5)), gamma, beta,
                                     float(out.scale))
    except QuantizationError as e:
        raise LoweringError(f"{src}: {e}") from e
    g = ctx.graph
    rank = len(shape)
    axis = rank - 1
    row = shape[:-1] + (1,)
    one = (1,) * rank
    base = node.name

    def temp(name, shp, dtype="int32"):
        return ctx.temp(f"{base}_{name}", shp, dtype)

    def op(name, inputs, output, attrs=None):
        g.add_op(Op(name, [t.name for t in inputs], [output.name], attrs or {}, src))
        return output

    def const(name, values, dtype="int32"):
        return ctx.const(f"{base}_{name}", np.asarray(values).reshape(one if np.size(values) == 1 else (*one[:-1], -1)),
                         dtype)

    def rescale(v, dst, scale, input_zp=0):
        ctx.rescale(v, dst, src, scale=scale)
        g.ops[-1].attrs["input_zp"] = input_zp
        return dst

    xin = x
    if shape != tuple(x.shape):
        xin = ctx.temp(f"{base}_rows", shape, x.dtype, x.scale, x.zero_point)
        op("RESHAPE", [x], xin, {"shape": list(shape)})
    big_x = rescale(xin, temp("x32", shape), 1.0, int(x.zero_point))
    g.ops[-1].attrs["layer_norm"] = {"row_len": c, "b": plan.b, "eps_units": plan.e, "newton": plan.newton, "s1": plan.s1,
                                     "s2": plan.s2, "f": plan.f,
                                     "error_bound_lsb": {str(s): round(plan.error_lsb(s), 3) for s in (4, 16, 64)}}
    total = op("REDUCE_SUM", [big_x], temp("sum", row), {"axis": axis})
    d = op("SUB", [op("MUL", [big_x, const("c", c)], temp("cx", shape), {"shift": 0}), total], temp("d", shape))
    w_sum = op("REDUCE_SUM", [op("MUL", [d, d], temp("d2", shape), {"shift": plan.b})], temp("w", row), {"axis": axis})
    w1 = op("ADD", [w_sum, const("eps", plan.e)], temp("w_eps", row))
    coarse, fine = seed_tables()
    seeds = []
    for name, table, scale in (("coarse", coarse, 2.0**-COARSE), ("fine", fine, 1.0)):
        idx = rescale(w1, temp(f"{name}_idx", row, "int16"), scale)
        looked = op("TABLE", [idx, ctx.const(f"{base}_seed_{name}", table, "int16")], temp(f"{name}_seed16", row),
                    {"part": f"layer_norm sqrt seed ({name}, negated)"})
        seeds.append(rescale(looked, temp(f"{name}_seed", row), 2.0**-6))
    both = op("CONCAT", seeds, temp("seeds", row[:-1] + (2,)), {"axis": axis})
    neg = op("REDUCE_MAX", [both], temp("neg_root", row), {"axis": axis})
    r = op("MUL", [neg, const("minus_one", -1)], temp("root0", row), {"shift": 0})
    for i in range(plan.newton):
        q = op("INTDIV", [w1, r], temp(f"quot{i}", row))
        r = rescale(op("ADD", [r, q], temp(f"twice{i}", row)), temp(f"root{i + 1}", row), 0.5)
    half = rescale(r, temp("half_root", row), 0.5)
    inv = op("INTDIV", [op("ADD", [half, const("one", INV_ONE)], temp("inv_num", row)), r], temp("inv", row))
    p = op("MUL", [d, inv], temp("normalized", shape), {"shift": plan.s1})
    y = op("MUL", [p, const("gamma", plan.g)], temp("scaled", shape), {"shift": plan.s2})
    y = op("ADD", [y, const("beta", plan.beta)], temp("shifted", shape))
    if shape == tuple(out.shape):
        dst = out
    else:
        dst = ctx.temp(f"{base}_rows_out", shape, out.dtype, out.scale, out.zero_point)
    ctx.rescale(y, dst, src, scale=2.0**-plan.f)
    if dst is not out:
        op("RESHAPE", [dst], out, {"shape": list(out.shape)})
