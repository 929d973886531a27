"""CONV2D int8 x int8 -> int32 and int16 x int8 -> int48: the spec of ``tabula_conv2d_s8`` and
``tabula_conv2d_s16``.

Semantics: TOSA 1.0 CONV2D.  Shapes and layouts:
    x  act   [N, H, W, Cin]  (NHWC; int8, or int16 with input_zp 0)
    w  int8  [Cout, KH, KW, Cin]  (OHWI)
    b  acc   [Cout]  (int32 for int8 x, int48 for int16 x)
    -> acc   [N, OH, OW, Cout],  OH = (H + pt + pb - dy*(KH-1) - 1) // sy + 1  (same for W)
attrs: ``pad`` [top, bottom, left, right] (>= 0), ``stride`` [sy, sx], ``dilation`` [dy, dx] (>= 1),
``input_zp`` (int8 range; 0 for int16), ``weight_zp`` (int8 range).

    out[n,oy,ox,o] = b[o] + sum_{ky,kx,i} (x[n, oy*sy - pt + ky*dy, ox*sx - pl + kx*dx, i] - input_zp)
                                        * (w[o,ky,kx,i] - weight_zp)

Padding acts as the input zero point (padded taps contribute 0).  Exact int64 arithmetic; a result
outside the accumulator (int32, or 48 bits for int16 x) raises (the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import (AccBound, TType, check_arrays, check_tosa_acc_type, conv_window, need, to_acc_exact, tosa_bias,
                      weighted, weighted_bound)

OP = "CONV2D"


def contract(ins: list[TType], attrs: dict) -> TType:
    x, w, acc = weighted(OP, ins, attrs)
    need(x.rank == 4 and w.rank == 4 and x.shape[3] == w.shape[3], OP, f"x {x.shape} NHWC / w {w.shape} OHWI mismatch")
    oh, ow = conv_window(OP, attrs, x.shape, w.shape[1], w.shape[2])
    return TType((x.shape[0], oh, ow, w.shape[0]), acc)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    x, w, b = inputs
    pt, pb, pl, pr = (int(v) for v in attrs["pad"])
    sy, sx = (int(v) for v in attrs["stride"])
    dy, dx = (int(v) for v in attrs.get("dilation", (1, 1)))
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    _, oh, ow, _ = out.shape
    kh, kw = w.shape[1:3]
    # (x - zp) padded with zeros == x padded with zp: padded taps contribute nothing.
    xz = np.pad(x.astype(np.int64) - izp, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    wz = w.astype(np.int64) - wzp
    acc = np.zeros(out.shape, dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dy, kx * dx
            patch = xz[:, y0 : y0 + sy * (oh - 1) + 1 : sy, x0 : x0 + sx * (ow - 1) + 1 : sx, :]
            acc += patch @ wz[:, ky, kx, :].T  # [N,OH,OW,Cin] @ [Cin,Cout]
    acc += b.astype(np.int64)
    return to_acc_exact(OP, acc, out.dtype)


def macs(ins: list[TType], out: TType, attrs: dict) -> int:
    """``N * OH * OW * Cout * KH * KW * Cin`` multiply-accumulates."""
    _, kh, kw, cin = ins[1].shape
    return int(np.prod(out.shape, dtype=np.int64)) * int(kh) * int(kw) * int(cin)


def channel_rows(w: np.ndarray) -> np.ndarray:
    """The weights of each output channel: ``[Cout, KH*KW*Cin]`` (a view of OHWI)."""
    return w.reshape(w.shape[0], -1)


def bound(ins: list[TType], attrs: dict, values: list) -> AccBound:
    """Per output channel ``|acc[c]| <= input_reach(x) * sum_taps |w - weight_zp| + |b[c]|``
    (:func:`tabula.reference._checks.weighted_bound`); ``values`` holds the constant ``w`` and ``b``."""
    return weighted_bound(ins, attrs, channel_rows(values[1]), values[2])


def tosa(t, op) -> None:
    """TOSA 1.0 CONV2D: inputs ``x``, ``w`` (CONST int8 OHWI), ``b`` (CONST [Cout]), ``input_zp``,
    ``weight_zp`` (CONST [1]); attributes ``pad`` (made exact by ``t.window``), ``stride``,
    ``dilation``, ``local_bound`` false, ``acc_type`` INT32 (int8 x) or INT48 (int16 x)."""
    xt, wt = t.tensor(op.inputs[0]), t.tensor(op.inputs[1])
    x, pad = t.window(op, t.input(op, 0), xt.shape, wt.shape[1:3], op.attrs)
    emit_conv2d(t, op, x, t.input(op, 1), pad, t.output(op))


def emit_conv2d(t, op, x: str, w: str, pad: list[int], out: str) -> None:
    """One TOSA CONV2D of the TOSA tensors ``x`` (NHWC) and ``w`` (OHWI) into ``out``, with ``op``'s bias
    (input 2), zero points, stride and dilation (default 1); also FULLY_CONNECTED's mapping."""
    a = op.attrs
    xt = t.tensor(op.inputs[0])
    zps = [t.zp(a.get("input_zp", 0), xt.dtype), t.zp(a.get("weight_zp", 0), "int8")]
    t.emit("CONV2D", [x, w, t.input(op, 2), *zps], [out],
           t.attr("Conv2d", pad, [int(v) for v in a.get("stride", (1, 1))], [int(v) for v in a.get("dilation", (1, 1))],
                  False, t.dtype(dtypes.ACC_DTYPE[xt.dtype])))


def from_tosa(r, top) -> None:
    """TOSA 1.0 CONV2D: ``x``, ``w`` (OHWI), ``b`` (``[Cout]``, or ``[1]`` for every channel: a constant is
    broadcast), ``input_zp``, ``weight_zp`` (CONST [1]) -> CONV2D with ``pad``, ``stride``, ``dilation`` and
    the zero points.  ``acc_type`` must be the IR's accumulator of ``x`` (INT32 for int8, INT48 for int16);
    ``local_bound`` only bounds floating-point error."""
    a = top.attrs
    check_tosa_acc_type(r, top, dtypes.ACC_DTYPE)
    cout = r.tosa_tensor(top.inputs[1])[0][0]
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1), tosa_bias(r, top, 2, cout)],
           {"pad": a["pad"], "stride": a["stride"], "dilation": a["dilation"],
            "input_zp": r.scalar(top, 3, "input_zp"), "weight_zp": r.scalar(top, 4, "weight_zp")})
