"""AVG_POOL2D int8 / int16: the spec of ``tabula_avg_pool2d_s8`` and ``tabula_avg_pool2d_s16``.

Semantics: TOSA 1.0 AVG_POOL2D.  x act [N, H, W, C] (NHWC) -> same dtype [N, OH, OW, C] with
``OH = (H + pt + pb - KH) // sy + 1`` (same for W).  attrs: ``kernel`` [kh, kw], ``stride`` [sy, sx],
``pad`` [top, bottom, left, right], ``input_zp``, ``output_zp`` (int8 range; both 0 for int16).

    acc   = sum over the window's valid (non-padded) taps of (x - input_zp)      (int32)
    count = number of valid taps;  (m, s) = reciprocal_scale(count)
    out   = clamp(apply_scale_32(acc, m, s) + output_zp, qmin, qmax)

:func:`tabula.qmath.reciprocal_scale` and :func:`tabula.qmath.apply_scale_32_round_half_up` (single
rounding, half toward +infinity).  Padded taps count in neither the sum nor the divisor.
Contract (ValueError otherwise): every pad < its kernel size, every window holds a real element,
and the accumulator fits int32.
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes
from tabula.qmath import apply_scale_32_round_half_up, reciprocal_scale

from .._checks import AccBound, TType, check_arrays, check_tosa_acc_type, check_zero_point, input_reach, no_macs, pool_window, to_int32_exact

OP = "AVG_POOL2D"


def contract(ins: list[TType], attrs: dict) -> TType:
    out = pool_window(OP, ins, attrs)[0]
    check_zero_point(OP, "input_zp", attrs.get("input_zp", 0), out.dtype)
    check_zero_point(OP, "output_zp", attrs.get("output_zp", 0), out.dtype)
    return out


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    (x,) = inputs
    (kh, kw), (sy, sx), (pt, pb, pl, pr) = attrs["kernel"], attrs["stride"], attrs["pad"]
    izp, ozp = int(attrs.get("input_zp", 0)), int(attrs.get("output_zp", 0))
    n, h, w, c = x.shape
    _, oh, ow, _ = out.shape
    pads = ((0, 0), (pt, pb), (pl, pr), (0, 0))
    xz = np.pad(x.astype(np.int64) - izp, pads)  # padded taps add 0 ...
    valid = np.pad(np.ones((1, h, w, 1), dtype=np.int64), pads)  # ... and are not counted
    acc = np.zeros(out.shape, dtype=np.int64)
    count = np.zeros((1, oh, ow, 1), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            rows, cols = slice(ky, ky + sy * (oh - 1) + 1, sy), slice(kx, kx + sx * (ow - 1) + 1, sx)
            acc += xz[:, rows, cols, :]
            count += valid[:, rows, cols, :]
    acc = to_int32_exact(OP, acc).astype(np.int64)
    m = np.empty_like(count)
    s = np.empty_like(count)
    for k in np.unique(count).tolist():
        m[count == k], s[count == k] = reciprocal_scale(int(k))
    lo, hi = dtypes.range_of(out.dtype)
    return np.clip(apply_scale_32_round_half_up(acc, m, s) + ozp, lo, hi).astype(x.dtype)


#: An average is a sum, not a weighted one: no MACs (the profile counts only multiply-accumulates).
macs = no_macs


def bound(ins: list[TType], attrs: dict, values: list) -> AccBound:
    """The int32 window sum: ``|acc| <= KH * KW * input_reach(x, input_zp)`` (``[1]``)."""
    kh, kw = (int(v) for v in attrs["kernel"])
    return AccBound(np.array([kh * kw * input_reach(ins[0].dtype, attrs.get("input_zp", 0))], np.int64), "int32")


def tosa(t, op) -> None:
    """TOSA 1.0 AVG_POOL2D: inputs ``x``, ``input_zp``, ``output_zp`` (CONST [1] of the input type);
    attributes ``kernel``, ``stride``, ``pad`` (made exact by ``t.window``), ``acc_type`` INT32.  TOSA
    divides by the number of non-padded taps and rounds with ``apply_scale_32(reciprocal_scale(count))``,
    as this spec does."""
    a = op.attrs
    xt = t.tensor(op.inputs[0])
    x, pad = t.window(op, t.input(op, 0), xt.shape, a["kernel"], a)
    zps = [t.zp(a.get("input_zp", 0), xt.dtype), t.zp(a.get("output_zp", 0), xt.dtype)]
    t.emit("AVG_POOL2D", [x, *zps], [t.output(op)],
           t.attr("AvgPool2d", [int(v) for v in a["kernel"]], [int(v) for v in a["stride"]], pad, t.DType.INT32))


def from_tosa(r, top) -> None:
    """TOSA 1.0 AVG_POOL2D: ``x``, ``input_zp``, ``output_zp`` (CONST [1]) and ``kernel``, ``stride``,
    ``pad``; ``acc_type`` must be INT32 (the kernels' accumulator for int8 and int16)."""
    a = top.attrs
    check_tosa_acc_type(r, top, {"int8": "int32", "int16": "int32"})
    r.emit(OP, top, [r.input(top, 0)], {"kernel": a["kernel"], "stride": a["stride"], "pad": a["pad"],
                                         "input_zp": r.scalar(top, 1, "input_zp"), "output_zp": r.scalar(top, 2, "output_zp")})
