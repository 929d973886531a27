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



#: TOSA 1.0 has no FULLY_CONNECTED: the reader reads the ops :func:`tosa` writes one by one, then
#: :func:`fold_tosa` makes them one FULLY_CONNECTED again.
from_tosa = None


def fold_tosa(g) -> None:
    """The inverse of :func:`tosa` on a graph the TOSA reader made (:mod:`tabula.tosa.reader`): each
    ``RESHAPE [N, Cin] -> [N, 1, 1, Cin]``, CONV2D 1x1 (stride 1, no padding, dilation 1) with a constant
    ``[Cout, 1, 1, Cin]`` weight, then ``RESHAPE -> [N, Cout]`` (int32 accumulator) or RESCALE then that
    RESHAPE (int48), whose intermediates nothing else reads, becomes FULLY_CONNECTED with the weight as
    ``[Cout, Cin]`` (then the RESCALE, on ``[N, Cout]``): the same arithmetic, element for element.  The
    graph ``g`` is changed in place."""
    while _fold_one(g):
        pass


def _fold_one(g) -> bool:
    from tabula.ir import Op, Tensor

    readers: dict[str, list] = {}
    for o in g.ops:
        for n in o.inputs:
            readers.setdefault(n, []).append(o)

    def sole(name: str, kind: str):
        us = readers.get(name, [])
        return us[0] if len(us) == 1 and us[0].op == kind and us[0].inputs[0] == name and name not in g.outputs else None

    for first in g.ops:
        if first.op != "RESHAPE":
            continue
        x, t1 = g.tensors[first.inputs[0]], g.tensors[first.outputs[0]]
        conv = sole(t1.name, "CONV2D")
        if conv is None or len(x.shape) != 2 or tuple(t1.shape) != (x.shape[0], 1, 1, x.shape[1]):
            continue
        w, a = g.tensors[conv.inputs[1]], conv.attrs
        if not (w.const and tuple(w.shape[1:3]) == (1, 1) and list(a["pad"]) == [0, 0, 0, 0]
                and list(a["stride"]) == [1, 1] and list(a.get("dilation", (1, 1))) == [1, 1]):
            continue
        acc4 = g.tensors[conv.outputs[0]]
        n, cin, cout = x.shape[0], x.shape[1], w.shape[0]
        rescale_op = sole(acc4.name, "RESCALE") if acc4.dtype == "int48" else None
        if acc4.dtype == "int48" and rescale_op is None:
            continue
        last = sole(rescale_op.outputs[0] if rescale_op else acc4.name, "RESHAPE")
        if last is None or tuple(g.tensors[last.outputs[0]].shape) != (n, cout):
            continue
        w2 = f"{w.name}_{cout}x{cin}"
        if w2 not in g.tensors:
            g.add_tensor(Tensor(w2, (cout, cin), "int8"), g.constants[w.name].reshape(cout, cin))
        attrs = {"input_zp": a.get("input_zp", 0), "weight_zp": a.get("weight_zp", 0)}
        dead = [t1.name, acc4.name]
        if rescale_op is None:
            new = [Op(OP, [x.name, w2, conv.inputs[2]], list(last.outputs), attrs, conv.source)]
        else:
            dead.append(rescale_op.outputs[0])
            acc = f"{acc4.name}_{n}x{cout}"
            g.add_tensor(Tensor(acc, (n, cout), "int48"))
            new = [Op(OP, [x.name, w2, conv.inputs[2]], [acc], attrs, conv.source),
                   Op("RESCALE", [acc], list(last.outputs), dict(rescale_op.attrs), rescale_op.source)]
        drop = {id(first), id(conv), id(rescale_op), id(last)}
        g.ops = [m for o in g.ops for m in (new if o is last else [o]) if id(m) not in drop]
        for t in dead:
            del g.tensors[t]
        if all(w.name not in o.inputs for o in g.ops) and w.name not in g.outputs:
            del g.tensors[w.name], g.constants[w.name]
        return True
    return False
