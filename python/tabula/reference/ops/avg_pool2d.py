"""AVG_POOL2D int8 / int16: the executable spec of ``tabula_avg_pool2d_s8`` and ``tabula_avg_pool2d_s16``.

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

from tabula.qmath import DTYPE_RANGE, apply_scale_32_round_half_up, reciprocal_scale

from .._checks import check_zero_point, need, to_int32_exact

OP = "AVG_POOL2D"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    need(x.dtype in (np.int8, np.int16) and x.ndim == 4, OP, f"input must be int8/int16 NHWC, got {x.dtype} {x.shape}")
    dtype = x.dtype.name
    kh, kw = (int(v) for v in attrs["kernel"])
    sy, sx = (int(v) for v in attrs["stride"])
    pt, pb, pl, pr = (int(v) for v in attrs["pad"])
    izp, ozp = int(attrs.get("input_zp", 0)), int(attrs.get("output_zp", 0))
    need(min(kh, kw, sy, sx) >= 1, OP, "kernel and stride must be >= 1")
    need(0 <= pt < kh and 0 <= pb < kh and 0 <= pl < kw and 0 <= pr < kw, OP, f"pad {attrs['pad']} must be in [0, kernel)")
    check_zero_point(OP, "input_zp", izp, "int8")
    check_zero_point(OP, "output_zp", ozp, "int8")
    need(dtype == "int8" or izp == ozp == 0, OP, f"int16 zero points must be 0 (got {izp}, {ozp})")
    n, h, w, c = x.shape
    oh, ow = (h + pt + pb - kh) // sy + 1, (w + pl + pr - kw) // sx + 1
    need(oh >= 1 and ow >= 1, OP, f"empty output {oh}x{ow}")
    need((oh - 1) * sy - pt < h and (ow - 1) * sx - pl < w, OP, "a window lies entirely in the padding")
    pads = ((0, 0), (pt, pb), (pl, pr), (0, 0))
    xz = np.pad(x.astype(np.int64) - izp, pads)  # padded taps add 0 ...
    valid = np.pad(np.ones((1, h, w, 1), dtype=np.int64), pads)  # ... and are not counted
    acc = np.zeros((n, oh, ow, c), dtype=np.int64)
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
    out = apply_scale_32_round_half_up(acc, m, s) + ozp
    lo, hi = DTYPE_RANGE[dtype]
    return np.clip(out, lo, hi).astype(dtype)
