"""CONV2D int8 x int8 -> int32: the executable spec of ``tabula_conv2d_s8``.

Semantics: TOSA 1.0 CONV2D.  Shapes and layouts:
    x  int8  [N, H, W, Cin]  (NHWC)
    w  int8  [Cout, KH, KW, Cin]  (OHWI)
    b  int32 [Cout]
    -> int32 [N, OH, OW, Cout],  OH = (H + pt + pb - dy*(KH-1) - 1) // sy + 1  (same for W)
attrs: ``pad`` [top, bottom, left, right], ``stride`` [sy, sx], ``dilation`` [dy, dx],
``input_zp``, ``weight_zp`` (int8 range).

    out[n,oy,ox,o] = b[o] + sum_{ky,kx,i} (x[n, oy*sy - pt + ky*dy, ox*sx - pl + kx*dx, i] - input_zp)
                                        * (w[o,ky,kx,i] - weight_zp)

Padding acts as the input zero point (padded taps contribute 0).  Exact int64 arithmetic; a result
outside int32 raises (the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np

from .._checks import check_zero_point, need, to_int32_exact

OP = "CONV2D"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    x, w, b = inputs
    need(x.dtype == np.int8 and w.dtype == np.int8 and b.dtype == np.int32, OP, "dtypes must be int8, int8, int32")
    need(x.ndim == 4 and w.ndim == 4 and x.shape[3] == w.shape[3], OP, f"x {x.shape} NHWC / w {w.shape} OHWI mismatch")
    need(b.shape == (w.shape[0],), OP, f"bias shape {b.shape} != ({w.shape[0]},)")
    pt, pb, pl, pr = (int(v) for v in attrs["pad"])
    sy, sx = (int(v) for v in attrs["stride"])
    dy, dx = (int(v) for v in attrs.get("dilation", (1, 1)))
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    need(min(pt, pb, pl, pr) >= 0 and min(sy, sx, dy, dx) >= 1, OP, "pad >= 0, stride and dilation >= 1")
    check_zero_point(OP, "input_zp", izp, "int8")
    check_zero_point(OP, "weight_zp", wzp, "int8")

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
    return to_int32_exact(OP, acc + b.astype(np.int64))
