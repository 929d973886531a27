"""MAX_POOL2D int8 / int16: the spec of ``tabula_max_pool2d_s8`` and ``tabula_max_pool2d_s16``.

Semantics: TOSA 1.0 MAX_POOL2D.  x act [N, H, W, C] (NHWC) -> same dtype [N, OH, OW, C] with
``OH = (H + pt + pb - KH) // sy + 1`` (same for W).  attrs: ``kernel`` [kh, kw], ``stride`` [sy, sx],
``pad`` [top, bottom, left, right].

    out[n,oy,ox,c] = max_{ky,kx} x[n, oy*sy - pt + ky, ox*sx - pl + kx, c]

Padding is the dtype minimum (-128 / -32768), so it never wins over a real element.  Contract (TOSA,
ValueError otherwise): every pad < its kernel size, and every window holds a real element.
"""
from __future__ import annotations

import numpy as np

from .._checks import TType, check_arrays, no_macs, pool_window

OP = "MAX_POOL2D"


def contract(ins: list[TType], attrs: dict) -> TType:
    return pool_window(OP, ins, attrs)[0]


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    (x,) = inputs
    (kh, kw), (sy, sx), (pt, pb, pl, pr) = attrs["kernel"], attrs["stride"], attrs["pad"]
    _, oh, ow, _ = out.shape
    lowest = np.iinfo(x.dtype).min
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=lowest)
    y = np.full(out.shape, lowest, dtype=x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            np.maximum(y, xp[:, ky : ky + sy * (oh - 1) + 1 : sy, kx : kx + sx * (ow - 1) + 1 : sx, :], out=y)
    return y


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 MAX_POOL2D: input ``x``; attributes ``kernel``, ``stride``, ``pad`` (made exact by
    ``t.window``: the rows and columns no window reads are dropped), ``nan_mode`` PROPAGATE."""
    a = op.attrs
    x, pad = t.window(op, t.input(op, 0), t.tensor(op.inputs[0]).shape, a["kernel"], a)
    t.emit("MAX_POOL2D", [x], [t.output(op)],
           t.attr("MaxPool2d", [int(v) for v in a["kernel"]], [int(v) for v in a["stride"]], pad, t.NanPropagationMode.PROPAGATE))


def from_tosa(r, top) -> None:
    """TOSA 1.0 MAX_POOL2D: ``kernel``, ``stride``, ``pad`` (``nan_mode`` has no effect on integers)."""
    a = top.attrs
    r.emit(OP, top, [r.input(top, 0)], {"kernel": a["kernel"], "stride": a["stride"], "pad": a["pad"]})
