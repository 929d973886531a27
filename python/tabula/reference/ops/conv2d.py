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

from .._checks import TType, check_arrays, conv_window, need, to_acc_exact, weighted

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
