"""MAX_POOL2D int8 / int16: the executable spec of ``tabula_max_pool2d_s8`` and ``tabula_max_pool2d_s16``.

Semantics: TOSA 1.0 MAX_POOL2D.  x act [N, H, W, C] (NHWC) -> same dtype [N, OH, OW, C] with
``OH = (H + pt + pb - KH) // sy + 1`` (same for W).  attrs: ``kernel`` [kh, kw], ``stride`` [sy, sx],
``pad`` [top, bottom, left, right].

    out[n,oy,ox,c] = max_{ky,kx} x[n, oy*sy - pt + ky, ox*sx - pl + kx, c]

Padding is the dtype minimum (-128 / -32768), so it never wins over a real element.  Contract (TOSA,
ValueError otherwise): every pad < its kernel size, and every window holds a real element.
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "MAX_POOL2D"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    need(x.dtype in (np.int8, np.int16) and x.ndim == 4, OP, f"input must be int8/int16 NHWC, got {x.dtype} {x.shape}")
    kh, kw = (int(v) for v in attrs["kernel"])
    sy, sx = (int(v) for v in attrs["stride"])
    pt, pb, pl, pr = (int(v) for v in attrs["pad"])
    need(min(kh, kw, sy, sx) >= 1, OP, "kernel and stride must be >= 1")
    need(0 <= pt < kh and 0 <= pb < kh and 0 <= pl < kw and 0 <= pr < kw, OP, f"pad {attrs['pad']} must be in [0, kernel)")
    n, h, w, c = x.shape
    oh, ow = (h + pt + pb - kh) // sy + 1, (w + pl + pr - kw) // sx + 1
    need(oh >= 1 and ow >= 1, OP, f"empty output {oh}x{ow}")
    need((oh - 1) * sy - pt < h and (ow - 1) * sx - pl < w, OP, "a window lies entirely in the padding")
    lowest = np.iinfo(x.dtype).min
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=lowest)
    out = np.full((n, oh, ow, c), lowest, dtype=x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            np.maximum(out, xp[:, ky : ky + sy * (oh - 1) + 1 : sy, kx : kx + sx * (ow - 1) + 1 : sx, :], out=out)
    return out
