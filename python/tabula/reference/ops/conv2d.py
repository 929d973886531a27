"""CONV2D int8 x int8 -> int32 and int16 x int8 -> int48: the executable spec of
``tabula_conv2d_s8`` and ``tabula_conv2d_s16``.

Semantics: TOSA 1.0 CONV2D.  Shapes and layouts:
    x  act   [N, H, W, Cin]  (NHWC; int8, or int16 with input_zp 0)
    w  int8  [Cout, KH, KW, Cin]  (OHWI)
    b  acc   [Cout]  (int32 for int8 x, int64 holding int48 for int16 x)
    -> acc   [N, OH, OW, Cout],  OH = (H + pt + pb - dy*(KH-1) - 1) // sy + 1  (same for W)
attrs: ``pad`` [top, bottom, left, right], ``stride`` [sy, sx], ``dilation`` [dy, dx],
``input_zp`` (int8 range; 0 for int16), ``weight_zp`` (int8 range).

    out[n,oy,ox,o] = b[o] + sum_{ky,kx,i} (x[n, oy*sy - pt + ky*dy, ox*sx - pl + kx*dx, i] - input_zp)
                                        * (w[o,ky,kx,i] - weight_zp)

Padding acts as the input zero point (padded taps contribute 0).  Exact int64 arithmetic; a result
outside the accumulator (int32, or 48 bits for int16 x) raises (the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np

from .._checks import act_and_acc, check_zero_point, need, to_int32_exact, to_int48_exact

OP = "CONV2D"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    x, w, b = inputs
    act = act_and_acc(OP, x, w, b)
    need(x.ndim == 4 and w.ndim == 4 and x.shape[3] == w.shape[3], OP, f"x {x.shape} NHWC / w {w.shape} OHWI mismatch")
    need(b.shape == (w.shape[0],), OP, f"bias shape {b.shape} != ({w.shape[0]},)")
    pt, pb, pl, pr = (int(v) for v in attrs["pad"])
    sy, sx = (int(v) for v in attrs["stride"])
    dy, dx = (int(v) for v in attrs.get("dilation", (1, 1)))
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    need(min(pt, pb, pl, pr) >= 0 and min(sy, sx, dy, dx) >= 1, OP, "pad >= 0, stride and dilation >= 1")
    check_zero_point(OP, "input_zp", izp, "int8")
    check_zero_point(OP, "weight_zp", wzp, "int8")
    need(act == "int8" or izp == 0, OP, f"input_zp={izp} on an int16 input (int16 is symmetric)")

    n, h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    oh = (h + pt + pb - dy * (kh - 1) - 1) // sy + 1
    ow = (wd + pl + pr - dx * (kw - 1) - 1) // sx + 1
    need(oh >= 1 and ow >= 1, OP, f"empty output {oh}x{ow}")
    # (x - zp) padded with zeros == x padded with zp: padded taps contribute nothing.
    xz = np.pad(x.astype(np.int64) - izp, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    wz = w.astype(np.int64) - wzp
    acc = np.zeros((n, oh, ow, cout), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dy, kx * dx
            patch = xz[:, y0 : y0 + sy * (oh - 1) + 1 : sy, x0 : x0 + sx * (ow - 1) + 1 : sx, :]
            acc += patch @ wz[:, ky, kx, :].T  # [N,OH,OW,Cin] @ [Cin,Cout]
    acc += b.astype(np.int64)
    return to_int32_exact(OP, acc) if act == "int8" else to_int48_exact(OP, acc)
