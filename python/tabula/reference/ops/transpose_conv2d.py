"""TRANSPOSE_CONV2D int8 x int8 -> int32 and int16 x int8 -> int48: the spec of
``tabula_transpose_conv2d_s8`` and ``tabula_transpose_conv2d_s16``.

Semantics: TOSA 1.0 TRANSPOSE_CONV2D (PyTorch ``conv_transpose2d`` with groups 1, dilation 1).  Shapes:
    x  act   [N, IH, IW, Cin]  (NHWC; int8, or int16 with input_zp 0)
    w  int8  [Cout, KH, KW, Cin]  (OHWI: PyTorch's [Cin, Cout, KH, KW] transposed)
    b  acc   [Cout]  (int32 for int8 x, int48 for int16 x)
    -> acc   [N, OH, OW, Cout],  OH = (IH - 1) * sy + pt + pb + KH  (same for W)
attrs: ``out_pad`` [top, bottom, left, right] (each > -kernel; PyTorch's padding p and output_padding op
are ``[-p, -p + op]``), ``stride`` [sy, sx] >= 1, ``input_zp`` (int8 range; 0 for int16), ``weight_zp``.

Every input pixel scatters its weighted kernel:
    out[n, iy*sy + pt + ky, ix*sx + pl + kx, o] += (x[n,iy,ix,i] - input_zp) * (w[o,ky,kx,i] - weight_zp)
for every tap landing inside the output, plus ``b[o]``.  Exact int64 arithmetic; a result outside the
accumulator raises (the IR forbids wrapping; :mod:`tabula.lowering.bound_accumulators_pass` proves it).
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import (AccBound, TType, check_arrays, check_tosa_acc_type, input_reach, ints, need, to_acc_exact, tosa_bias,
                      weighted)

OP = "TRANSPOSE_CONV2D"


def contract(ins: list[TType], attrs: dict) -> TType:
    x, w, acc = weighted(OP, ins, attrs)
    need(x.rank == 4 and w.rank == 4 and x.shape[3] == w.shape[3], OP, f"x {x.shape} NHWC / w {w.shape} OHWI mismatch")
    pt, pb, pl, pr = ints(OP, attrs, "out_pad", 4)
    sy, sx = ints(OP, attrs, "stride", 2)
    kh, kw = w.shape[1:3]
    need(sy >= 1 and sx >= 1, OP, "stride must be >= 1")
    need(min(pt, pb) > -kh and min(pl, pr) > -kw, OP, f"out_pad {[pt, pb, pl, pr]} must be > -kernel (TOSA ERROR_IF)")
    oh, ow = (x.shape[1] - 1) * sy + pt + pb + kh, (x.shape[2] - 1) * sx + pl + pr + kw
    need(oh >= 1 and ow >= 1, OP, f"empty output {oh}x{ow}")
    return TType((x.shape[0], oh, ow, w.shape[0]), acc)


def _crop(full: np.ndarray, before: int, after: int, axis: int) -> np.ndarray:
    """``full`` with ``before`` / ``after`` zero rows added (positive) or removed (negative) on ``axis``."""
    n = full.shape[axis]
    idx = [slice(None)] * full.ndim
    idx[axis] = slice(max(0, -before), n - max(0, -after))
    full = full[tuple(idx)]
    pads = [(0, 0)] * full.ndim
    pads[axis] = (max(0, before), max(0, after))
    return np.pad(full, pads)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    x, w, b = inputs
    pt, pb, pl, pr = (int(v) for v in attrs["out_pad"])
    sy, sx = (int(v) for v in attrs["stride"])
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    n, ih, iw, _ = x.shape
    cout, kh, kw, _ = w.shape
    xz = x.astype(np.int64) - izp
    wz = w.astype(np.int64) - wzp
    full = np.zeros((n, (ih - 1) * sy + kh, (iw - 1) * sx + kw, cout), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky : ky + sy * (ih - 1) + 1 : sy, kx : kx + sx * (iw - 1) + 1 : sx, :] += xz @ wz[:, ky, kx, :].T
    acc = _crop(_crop(full, pt, pb, 1), pl, pr, 2) + b.astype(np.int64)
    assert acc.shape == out.shape, (acc.shape, out.shape)
    return to_acc_exact(OP, acc, out.dtype)


def macs(ins: list[TType], out: TType, attrs: dict) -> int:
    """``N * IH * IW * Cout * KH * KW * Cin`` multiply-accumulates (every input pixel times the kernel;
    taps landing outside the output included, as a scatter computes them)."""
    x, w = ins[0], ins[1]
    return int(np.prod(x.shape[:3], dtype=np.int64)) * int(np.prod(w.shape, dtype=np.int64))


def channel_rows(w: np.ndarray) -> np.ndarray:
    """The weights of each output channel: ``[Cout, KH*KW*Cin]`` (a view of OHWI)."""
    return w.reshape(w.shape[0], -1)


def bound(ins: list[TType], attrs: dict, values: list) -> AccBound:
    """Per output channel ``|acc[c]| <= input_reach(x) * max_phase sum |w - weight_zp| + |b[c]|``: an output
    pixel receives the taps ``(ky, kx)`` of one phase ``(ky mod sy, kx mod sx)`` only."""
    w = np.asarray(values[1], np.int64) - int(attrs.get("weight_zp", 0))
    sy, sx = (int(v) for v in attrs["stride"])
    aw = np.abs(w)
    phases = [aw[:, py::sy, px::sx, :].reshape(aw.shape[0], -1).sum(axis=1) for py in range(min(sy, aw.shape[1]))
              for px in range(min(sx, aw.shape[2]))]
    reach = input_reach(ins[0].dtype, attrs.get("input_zp", 0)) * np.max(phases, axis=0) + np.abs(np.asarray(values[2], np.int64))
    return AccBound(reach.astype(np.int64), dtypes.ACC_DTYPE[ins[0].dtype])


def tosa(t, op) -> None:
    """TOSA 1.0 TRANSPOSE_CONV2D: inputs ``x``, ``w`` (CONST int8 OHWI), ``b`` (CONST [Cout]), ``input_zp``,
    ``weight_zp`` (CONST [1]); attributes ``out_pad``, ``stride``, ``local_bound`` false, ``acc_type`` INT32
    (int8 x) or INT48 (int16 x)."""
    a = op.attrs
    xt = t.tensor(op.inputs[0])
    zps = [t.zp(a.get("input_zp", 0), xt.dtype), t.zp(a.get("weight_zp", 0), "int8")]
    t.emit("TRANSPOSE_CONV2D", [t.input(op, 0), t.input(op, 1), t.input(op, 2), *zps], [t.output(op)],
           t.attr("TransposeConv2d", [int(v) for v in a["out_pad"]], [int(v) for v in a["stride"]], False,
                  t.dtype(dtypes.ACC_DTYPE[xt.dtype])))


def from_tosa(r, top) -> None:
    """TOSA 1.0 TRANSPOSE_CONV2D: ``x``, ``w`` (OHWI), ``b`` (``[Cout]``, or ``[1]``: a constant is broadcast),
    ``input_zp``, ``weight_zp`` (CONST [1]) -> TRANSPOSE_CONV2D with ``out_pad``, ``stride`` and the zero points;
    ``acc_type`` must be the IR's accumulator of ``x`` (INT32 for int8, INT48 for int16)."""
    a = top.attrs
    check_tosa_acc_type(r, top, dtypes.ACC_DTYPE)
    cout = r.tosa_tensor(top.inputs[1])[0][0]
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1), tosa_bias(r, top, 2, cout)],
           {"out_pad": a["out_pad"], "stride": a["stride"], "input_zp": r.scalar(top, 3, "input_zp"),
            "weight_zp": r.scalar(top, 4, "weight_zp")})
