"""DEPTHWISE_CONV2D int8 x int8 -> int32 and int16 x int8 -> int48: the spec of
``tabula_depthwise_conv2d_s8`` and ``tabula_depthwise_conv2d_s16``.

Semantics: TOSA 1.0 DEPTHWISE_CONV2D.  Each input channel ``c`` is convolved with its own ``M``
filters (``M`` = the channel multiplier); filter ``m`` of channel ``c`` makes output channel
``c*M + m``.  Shapes and layouts:
    x  act   [N, H, W, C]      (NHWC; int8, or int16 with input_zp 0)
    w  int8  [KH, KW, C, M]    (TOSA's layout: in memory, each tap's C*M weights are contiguous in
                                output-channel order, the order of the NHWC output, so a kernel
                                walks input, weights and output with the same channel stride)
    b  acc   [C*M]             (int32 for int8 x, int48 for int16 x)
    -> acc   [N, OH, OW, C*M], OH = (H + pt + pb - dy*(KH-1) - 1) // sy + 1  (same for W)
attrs: ``pad`` [top, bottom, left, right] (>= 0), ``stride`` [sy, sx], ``dilation`` [dy, dx] (>= 1),
``input_zp`` (int8 range; 0 for int16), ``weight_zp`` (int8 range).

    out[n,oy,ox,c*M+m] = b[c*M+m] + sum_{ky,kx} (x[n, oy*sy - pt + ky*dy, ox*sx - pl + kx*dx, c] - input_zp)
                                              * (w[ky,kx,c,m] - weight_zp)

PyTorch: ``conv2d(groups=C)`` with weight ``[C*M, 1, KH, KW]`` is this op with
``w = weight.reshape(C, M, KH, KW).permute(2, 3, 0, 1)`` (PyTorch's output channel ``o`` reads
input channel ``o // M``, the same numbering).  Padding acts as the input zero point (padded taps
contribute 0).  Exact int64 arithmetic; a result outside the accumulator (int32, or 48 bits for
int16 x) raises (the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import (AccBound, TType, check_arrays, check_tosa_acc_type, check_zero_point, conv_window, n_inputs, need,
                      to_acc_exact, tosa_bias, weighted_bound)

OP = "DEPTHWISE_CONV2D"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 3)
    x, w, b = ins
    acc = dtypes.ACC_DTYPE.get(x.dtype)
    need(acc is not None and w.dtype == "int8" and b.dtype == acc, OP,
         f"dtypes must be int8, int8, int32 or int16, int8, int48 (got {x.dtype}, {w.dtype}, {b.dtype})")
    need(x.rank == 4 and w.rank == 4 and x.shape[3] == w.shape[2], OP,
         f"x {x.shape} NHWC / w {w.shape} [KH, KW, C, M] mismatch")
    cout = w.shape[2] * w.shape[3]
    need(min(w.shape) >= 1 and b.shape == (cout,), OP, f"bias shape {b.shape} != ({cout},) (C*M)")
    check_zero_point(OP, "input_zp", attrs.get("input_zp", 0), x.dtype)
    check_zero_point(OP, "weight_zp", attrs.get("weight_zp", 0), "int8")
    oh, ow = conv_window(OP, attrs, x.shape, w.shape[0], w.shape[1])
    return TType((x.shape[0], oh, ow, cout), acc)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    x, w, b = inputs
    pt, pb, pl, pr = (int(v) for v in attrs["pad"])
    sy, sx = (int(v) for v in attrs["stride"])
    dy, dx = (int(v) for v in attrs.get("dilation", (1, 1)))
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    n, oh, ow, _ = out.shape
    kh, kw, c, m = w.shape
    # (x - zp) padded with zeros == x padded with zp: padded taps contribute nothing.
    xz = np.pad(x.astype(np.int64) - izp, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    wz = w.astype(np.int64) - wzp
    acc = np.zeros((n, oh, ow, c, m), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dy, kx * dx
            patch = xz[:, y0 : y0 + sy * (oh - 1) + 1 : sy, x0 : x0 + sx * (ow - 1) + 1 : sx, :]  # [N,OH,OW,C]
            acc += patch[..., None] * wz[ky, kx]  # [N,OH,OW,C,1] * [C,M]
    acc = acc.reshape(out.shape) + b.astype(np.int64)
    return to_acc_exact(OP, acc, out.dtype)


def macs(ins: list[TType], out: TType, attrs: dict) -> int:
    """``N * OH * OW * C * M * KH * KW`` multiply-accumulates."""
    kh, kw = ins[1].shape[:2]
    return int(np.prod(out.shape, dtype=np.int64)) * int(kh) * int(kw)


def channel_rows(w: np.ndarray) -> np.ndarray:
    """The weights of each output channel ``c*M + m``: ``[C*M, KH*KW]`` (a view of ``[KH, KW, C, M]``)."""
    return w.reshape(-1, w.shape[-2] * w.shape[-1]).T


def bound(ins: list[TType], attrs: dict, values: list) -> AccBound:
    """Per output channel ``|acc[c]| <= input_reach(x) * sum_taps |w - weight_zp| + |b[c]|``
    (:func:`tabula.reference._checks.weighted_bound`); ``values`` holds the constant ``w`` and ``b``."""
    return weighted_bound(ins, attrs, channel_rows(values[1]), values[2])


def tosa(t, op) -> None:
    """TOSA 1.0 DEPTHWISE_CONV2D: inputs ``x``, ``w`` (CONST int8 [KH, KW, C, M]), ``b`` (CONST [C*M]),
    ``input_zp``, ``weight_zp`` (CONST [1]); attributes ``pad`` (made exact by ``t.window``), ``stride``,
    ``dilation``, ``local_bound`` false, ``acc_type`` INT32 (int8 x) or INT48 (int16 x)."""
    a = op.attrs
    xt, wt = t.tensor(op.inputs[0]), t.tensor(op.inputs[1])
    x, pad = t.window(op, t.input(op, 0), xt.shape, wt.shape[:2], a)
    zps = [t.zp(a.get("input_zp", 0), xt.dtype), t.zp(a.get("weight_zp", 0), "int8")]
    t.emit("DEPTHWISE_CONV2D", [x, t.input(op, 1), t.input(op, 2), *zps], [t.output(op)],
           t.attr("DepthwiseConv2d", pad, [int(v) for v in a["stride"]], [int(v) for v in a.get("dilation", (1, 1))], False,
                  t.dtype(dtypes.ACC_DTYPE[xt.dtype])))


def from_tosa(r, top) -> None:
    """TOSA 1.0 DEPTHWISE_CONV2D: ``x``, ``w`` ``[KH, KW, C, M]``, ``b`` (``[C*M]``, or ``[1]``: a constant is
    broadcast), ``input_zp``, ``weight_zp`` (CONST [1]) -> DEPTHWISE_CONV2D with ``pad``, ``stride``,
    ``dilation`` and the zero points; ``acc_type`` as CONV2D's."""
    a = top.attrs
    check_tosa_acc_type(r, top, dtypes.ACC_DTYPE)
    kh, kw, c, m = r.tosa_tensor(top.inputs[1])[0]
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1), tosa_bias(r, top, 2, c * m)],
           {"pad": a["pad"], "stride": a["stride"], "dilation": a["dilation"],
            "input_zp": r.scalar(top, 3, "input_zp"), "weight_zp": r.scalar(top, 4, "weight_zp")})
