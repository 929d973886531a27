"""FULLY_CONNECTED int8 x int8 -> int32 and int16 x int8 -> int48: the spec of
``tabula_fully_connected_s8`` and ``tabula_fully_connected_s16``.

Semantics: TOSA 0.80 FULLY_CONNECTED.  Shapes:
    x act [N, Cin], w int8 [Cout, Cin], b acc [Cout] -> acc [N, Cout]
(act int8 -> acc int32; act int16 -> acc int48.)  attrs: ``input_zp`` (int8 range; 0 for int16),
``weight_zp`` (int8 range).

    out[n,o] = b[o] + sum_i (x[n,i] - input_zp) * (w[o,i] - weight_zp)

Exact int64 arithmetic; a result outside the accumulator (int32, or 48 bits for int16 x) raises
(the IR forbids wrapping).
"""
from __future__ import annotations

import numpy as np
from tabula.errors import IRError

from . import conv2d, rescale
from .._checks import AccBound, TType, check_arrays, need, to_acc_exact, weighted, weighted_bound

OP = "FULLY_CONNECTED"


def contract(ins: list[TType], attrs: dict) -> TType:
    x, w, acc = weighted(OP, ins, attrs)
    need(x.rank == 2 and w.rank == 2 and x.shape[1] == w.shape[1], OP, f"x {x.shape} / w {w.shape} mismatch")
    return TType((x.shape[0], w.shape[0]), acc)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    x, w, b = inputs
    izp, wzp = int(attrs.get("input_zp", 0)), int(attrs.get("weight_zp", 0))
    acc = (x.astype(np.int64) - izp) @ (w.astype(np.int64) - wzp).T + b.astype(np.int64)
    return to_acc_exact(OP, acc, out.dtype)


def macs(ins: list[TType], out: TType, attrs: dict) -> int:
    """``N * Cout * Cin`` multiply-accumulates."""
    return int(np.prod(out.shape, dtype=np.int64)) * int(ins[0].shape[-1])


def channel_rows(w: np.ndarray) -> np.ndarray:
    """The weights of each output channel: ``[Cout, Cin]`` as they are."""
    return w


def bound(ins: list[TType], attrs: dict, values: list) -> AccBound:
    """Per output channel ``|acc[c]| <= input_reach(x) * sum_i |w[c,i] - weight_zp| + |b[c]|``
    (:func:`tabula.reference._checks.weighted_bound`); ``values`` holds the constant ``w`` and ``b``."""
    return weighted_bound(ins, attrs, channel_rows(values[1]), values[2])


def tosa(t, op) -> None:
    """TOSA 1.0 has no FULLY_CONNECTED: ``x [N, Cin]`` -> RESHAPE ``[N, 1, 1, Cin]`` -> CONV2D 1x1 with
    ``w`` as ``[Cout, 1, 1, Cin]`` (:func:`tabula.reference.ops.conv2d.emit_conv2d`) -> the accumulator
    ``[N, 1, 1, Cout]`` -> RESHAPE ``[N, Cout]``.  An int48 accumulator (int16 x) is not reshaped: the
    reference model has no int48 RESHAPE, so the RESCALE that reads it (it must be its only reader) runs on
    the 4-D accumulator and the RESHAPE follows it (RESHAPE -> CONV2D -> RESCALE -> RESHAPE; the RESCALE
    is claimed, so the driver does not emit it again).  Raises IRError when that RESCALE is missing."""
    xt, wt, acc = t.tensor(op.inputs[0]), t.tensor(op.inputs[1]), t.tensor(op.outputs[0])
    (n, cin), cout = xt.shape, wt.shape[0]
    x4 = t.reshape(t.input(op, 0), (n, 1, 1, cin), xt.dtype)
    acc4 = t.temp((n, 1, 1, cout), acc.dtype)
    conv2d.emit_conv2d(t, op, x4, t.input(op, 1, shape=(cout, 1, 1, cin)), [0, 0, 0, 0], acc4)
    if acc.dtype != "int48":
        t.reshape(acc4, acc.shape, acc.dtype, out=t.output(op))
        return
    users = t.consumers(acc.name)
    if len(users) != 1 or users[0].op != "RESCALE" or acc.name in t.g.outputs:
        raise IRError(f"{OP} ({op.source or 'no source'}): its int48 accumulator must feed exactly one RESCALE to be "
                      "serialized (the TOSA reference model has no int48 RESHAPE)")
    (r,) = users
    y = t.tensor(r.outputs[0])
    y4 = t.temp((n, 1, 1, cout), y.dtype)
    rescale.tosa(t, r, x=acc4, out=y4)
    t.reshape(y4, y.shape, y.dtype, out=t.output(r))
    t.claim(r)
