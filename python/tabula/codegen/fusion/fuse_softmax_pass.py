"""Codegen fusion ``SOFTMAX``: a softmax's op sequence as :func:`tabula.lowering.ops.softmax.emit_softmax` emits it
(REDUCE_MAX, TILE, SUB, RESCALEs, TABLEs, ADD, MUL, REDUCE_SUM, INTDIV) becomes one
``tabula_softmax_<t>`` call: no int32 tensor of the sequence takes arena space."""
from __future__ import annotations

import numpy as np

from ...ir import Graph, Op, Tensor
from ._graph import consumers_of, fused_group, is_scale, rebuild

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {}


FUSED_SOFTMAX = "SOFTMAX"

#: The op of each role of a softmax sequence (``attrs["softmax"]["roles"]``, one per op, in order).
_SOFTMAX_ROLES = {
    "x32": "RESCALE", "max": "REDUCE_MAX", "max_tiled": "TILE", "d": "SUB",
    "idx": "RESCALE",  # one level
    "a": "RESCALE", "a_up": "RESCALE", "b": "SUB", "idx_a": "RESCALE", "idx_b": "RESCALE",  # two levels
    "a_hi": "TABLE", "a_lo": "TABLE", "a_lo_down": "RESCALE", "exp_a": "ADD",
    "b_hi": "TABLE", "b_lo": "TABLE", "b_lo_down": "RESCALE", "exp_b": "ADD", "e": ("ADD", "MUL"),
    "sum": "REDUCE_SUM", "den": "RESCALE", "half": "RESCALE", "den_tiled": "TILE", "half_tiled": "TILE",
    "q_tiled": "TILE", "n": "MUL", "num": "ADD", "quot": "INTDIV", "y": "RESCALE",
}
_SOFTMAX_ONE_LEVEL = ["x32", "max", "max_tiled", "d", "idx", "a_hi", "a_lo", "a_lo_down", "e", "sum", "den", "half",
                      "den_tiled", "half_tiled", "q_tiled", "n", "num", "quot", "y"]
_SOFTMAX_TWO_LEVEL = (_SOFTMAX_ONE_LEVEL[:4] + ["a", "a_up", "b", "idx_a", "idx_b", "a_hi", "a_lo", "a_lo_down", "exp_a",
                                                "b_hi", "b_lo", "b_lo_down", "exp_b"] + _SOFTMAX_ONE_LEVEL[8:])


def _softmax_op(g: Graph, ops: dict[str, Op], meta: dict) -> tuple[Op, dict[str, tuple]] | None:
    """The fused SOFTMAX op of one softmax sequence (ops by role), its exp tables evaluated through the
    sequence's own TABLE / RESCALE / ADD ops (the reference), or None when an op is not what the kernel
    computes (the sequence then runs op by op)."""
    from ...reference.ops import add, rescale, table

    if list(ops) not in (_SOFTMAX_ONE_LEVEL, _SOFTMAX_TWO_LEVEL) or any(
            o.op not in ((want,) if isinstance(want, str) else want) for o, want in ((ops[r], _SOFTMAX_ROLES[r]) for r in ops)):
        return None
    up = (1 << 30, 30 - 7)  # x 2^7: the exact-knot TABLE index
    if not (is_scale(ops["x32"], 1 << 30, 30, input_zp=None) and is_scale(ops["y"], 1 << 30, 30, output_zp=None)
            and is_scale(ops["a_lo_down"], 1 << 30, 37)):
        return None
    two = "b" in ops
    if two:
        k = int(meta["split_bits"])
        if not (is_scale(ops["a"], 1 << 30, 30 + k) and is_scale(ops["a_up"], 1 << 30, 30 - k)
                and is_scale(ops["idx_a"], *up) and is_scale(ops["idx_b"], *up) and is_scale(ops["b_lo_down"], 1 << 30, 37)):
            return None
    elif not is_scale(ops["idx"], *up):
        return None

    def exp_values(prefix: str, index: str, points: np.ndarray) -> np.ndarray:
        """The sequence's exp of ``points`` (int32 values of d, a or b), op by op from the index RESCALE."""
        idx = rescale.run([points.astype(np.int32)], {**ops[index].attrs, "output_dtype": "int16"})
        hi = table.run([idx, g.constants[ops[f"{prefix}_hi"].inputs[1]]], {})
        lo = table.run([idx, g.constants[ops[f"{prefix}_lo"].inputs[1]]], {})
        lo = rescale.run([lo], {**ops[f"{prefix}_lo_down"].attrs, "output_dtype": "int32"})
        return add.run([hi, lo], {})

    y = meta["output"]
    exp_hi = exp_values("a", "idx_a" if two else "idx", np.arange(-256, 1))
    added = {f"{y}__exp_hi": (Tensor(f"{y}__exp_hi", (257,), "int32"), exp_hi)}
    attrs: dict = {"axis": int(meta["axis"]), "split_bits": 0, "exp_shift": 0}
    if two:
        half_k = (1 << k) >> 1
        added[f"{y}__exp_lo"] = (Tensor(f"{y}__exp_lo", (1 << k,), "int32"), exp_values("b", "idx_b", np.arange(-half_k, (1 << k) - half_k)))
        attrs.update(split_bits=k, exp_shift=int(ops["e"].attrs.get("shift", 0)))
    q_mult = g.constants.get(ops["q_tiled"].inputs[0])
    den, half = ops["den"].attrs, ops["half"].attrs
    if (q_mult is None or np.unique(q_mult).size != 1 or len(den["multiplier"]) != 1 or len(half["multiplier"]) != 1
            or int(den.get("output_zp", 0)) or int(half.get("output_zp", 0))):
        return None
    attrs["scales"] = [int(q_mult.reshape(-1)[0]), int(ops["n"].attrs.get("shift", 0)), int(den["multiplier"][0]),
                       int(den["shift"][0]), int(half["multiplier"][0]), int(half["shift"][0])]
    attrs["output_zp"] = int(ops["y"].attrs.get("output_zp", 0))
    return Op(FUSED_SOFTMAX, [meta["input"], *added], [y], attrs, ops["y"].source), added


def fuse_softmax(g: Graph) -> Graph:
    """A copy of ``g`` in which every softmax op sequence (its first op carries ``attrs["softmax"]``) is
    one ``SOFTMAX`` op: inputs ``[x, exp_hi]`` or ``[x, exp_hi, exp_lo]`` (int32 constants: the value of
    the sequence's exp at every index, evaluated through its own ops), output the softmax's result,
    ``attrs``: ``axis``, ``split_bits``, ``exp_shift``, ``scales`` (``[Qc, shN, D multiplier, D shift,
    H multiplier, H shift]``) and ``output_zp`` -- the arguments of ``tabula_softmax_<t>``, which is
    bit-exact with the sequence.  Placed where the sequence's last op was; the sequence's own constants
    go when nothing else reads them.  A sequence is left as it is when one of its intermediates is read
    outside it or is a graph output, or when its ops are not the ones the kernel computes.  ``g`` is
    not modified."""
    consumers = consumers_of(g)
    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for op in g.ops:
        meta = op.attrs.get("softmax")
        if not isinstance(meta, dict):
            continue
        internal, out = set(meta["internal"]), meta["output"]
        group = fused_group(g, consumers, internal, out)
        if group is None or len(group) != len(meta["roles"]):
            continue
        ops = dict(zip(meta["roles"], (g.ops[i] for i in group)))
        fused = _softmax_op(g, ops, meta)
        if fused is None:
            continue
        replace[group[-1]] = fused[0]
        added.update(fused[1])
        drop.update(group[:-1])
        removed |= internal
        for i in group:
            for n in g.ops[i].inputs:
                if g.tensors[n].const and all(c in group for c in consumers[n]):
                    removed.add(n)
    if not replace:
        return g
    return rebuild(g, replace, drop, removed, added)
