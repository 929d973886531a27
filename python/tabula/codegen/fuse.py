"""Codegen-only fusion: the IR stays TOSA (the reference, the TOSA serializer and the reports see
every op); the C runner may compute a group of IR ops with one kernel when that is bit-exact.

``TABLE16``: an int16 table op's sequence as :func:`tabula.lowering.ops.table.emit_int16` emits it
(TABLE, RESCALE x 2^-7; or shift TABLEs and zoom RESCALEs, TABLEs, CLAMPs, RESCALEs, ADD/SUBs, MUL --
:class:`tabula.qmath.Table16Plan`) becomes one ``tabula_table16_s16`` call: its int32 intermediates get
no arena space, its shift tables no flash (the kernel computes ``(x - centre) * 2^zoom`` directly) and
the element loop runs once.  The emitter names the group's intermediates in its first op's
``attrs["internal"]``.

``SOFTMAX``: a softmax's op sequence as :func:`tabula.lowering.ops.softmax.emit_softmax` emits it
(REDUCE_MAX, TILE, SUB, RESCALEs, TABLEs, ADD, MUL, REDUCE_SUM, INTDIV) becomes one
``tabula_softmax_<t>`` call (:func:`fuse_softmax`): no int32 tensor of the sequence takes arena space.

Requantization (:func:`fuse_requant`): a CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED whose accumulator's
only reader is a RESCALE to the input's own type (int32 -> int8, int48 -> int16), and the CLAMP of a
fused activation when it is that RESCALE's only reader, becomes one accumulator op that requantizes in
its epilogue (the kernels' ``requant`` block): no int32 / int48 tensor in the arena.

Input zero point (:func:`fold_input_zp`): an int8 CONV2D / FULLY_CONNECTED with symmetric weights gets
``bias - input_zp * sum(w)`` as its bias at build time (CONV2D then calls ``tabula_conv2d_s8_folded``,
whose padded taps read as the zero point): no weight sums at run time.

``ADD_REQUANT`` (:func:`fuse_add_requant`): an ADD / SUB of two activations as the lowering emits it
(RESCALE each to int32, ADD / SUB, RESCALE back [, CLAMP]) becomes one ``tabula_add_requant_<t>`` call:
the residual additions of a ResNet keep no int32 tensor in the arena and pass over the data once.

PAD into a convolution (:func:`fuse_pad`): a zero-point PAD of H and W read only by a CONV2D /
DEPTHWISE_CONV2D becomes that op's own padding (no padded copy).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ir import Graph, Op, Tensor

FUSED_TABLE16 = "TABLE16"
FUSED_SOFTMAX = "SOFTMAX"


def fuse_table16(g: Graph) -> Graph:
    """A copy of ``g`` in which every fusable int16 table op is one ``TABLE16`` op
    (inputs ``[x, hi0, lo0?, hi1, ...]``, output the op's int16 result; ``attrs``: ``terms``
    ``[{"zoom", "centre", "hi", "lo"}]``, ``ramps``, ``product``, ``frac_bits`` and ``wide``), placed where
    its last op was.  A group is left as it is when one of its intermediates is read outside it or is a
    graph output.  Constants no op reads any more (the shift tables) are dropped.  ``g`` is not modified."""
    consumers = _consumers(g)
    replace: dict[int, Op] = {}  # index of the group's last op -> fused op
    drop: set[int] = set()
    removed: set[str] = set()
    for op in g.ops:
        a = op.attrs
        if "internal" not in a or "output" not in a:
            continue
        internal, out = set(a["internal"]), a["output"]
        group = [i for i, o in enumerate(g.ops) if set(o.outputs) & (internal | {out})]
        if internal & set(g.outputs) or any(c not in group for n in internal for c in consumers.get(n, [])):
            continue
        terms = a["terms"] if "terms" in a else [{"zoom": 0, "centre": 0, "hi": op.inputs[1], "lo": None}]
        consts = [n for t in terms for n in (t["hi"], t.get("lo")) if n is not None]
        x = a.get("input", op.inputs[0])
        wide = "frac_bits" in a
        attrs = {"terms": [dict(zoom=int(t["zoom"]), centre=int(t.get("centre", 0)), hi=t["hi"], lo=t.get("lo"))
                           for t in terms],
                 "ramps": [dict(r) for r in a.get("ramps") or ()], "product": a.get("product"),
                 "frac_bits": int(a.get("frac_bits", 7)), "wide": wide, "function": a.get("function")}
        replace[group[-1]] = Op(FUSED_TABLE16, [x] + consts, [out], attrs, op.source)
        drop.update(group[:-1])
        removed |= internal
    if not replace:
        return g
    ops = [replace[i] if i in replace else op for i, op in enumerate(g.ops) if i in replace or i not in drop]
    read = {n for op in ops for n in op.inputs}
    f = Graph()
    for name, t in g.tensors.items():
        if name in removed or (name in g.constants and name not in read):
            continue
        f.add_tensor(t, g.constants.get(name))
    for op in ops:
        f.add_op(op)
    f.inputs, f.outputs, f.io_layout = list(g.inputs), list(g.outputs), dict(g.io_layout)
    return f


def _group(g: Graph, consumers: dict[str, list[int]], internal: set[str], out: str) -> list[int] | None:
    """Indices of the ops producing ``internal`` and ``out``, or None when an intermediate is read
    outside them or is a graph output (the group must then stay as it is)."""
    group = [i for i, o in enumerate(g.ops) if set(o.outputs) & (internal | {out})]
    if internal & set(g.outputs) or any(c not in group for n in internal for c in consumers.get(n, [])):
        return None
    return group


def _rebuild(g: Graph, replace: dict[int, Op], drop: set[int], removed: set[str], added: dict[str, tuple]) -> Graph:
    f = Graph()
    for name, t in g.tensors.items():
        if name not in removed:
            f.add_tensor(t, g.constants.get(name))
    for name, (t, data) in added.items():
        f.add_tensor(t, data)
    for i, op in enumerate(g.ops):
        if i in replace:
            f.add_op(replace[i])
        elif i not in drop:
            f.add_op(op)
    f.inputs, f.outputs, f.io_layout = list(g.inputs), list(g.outputs), dict(g.io_layout)
    return f


def _consumers(g: Graph) -> dict[str, list[int]]:
    """Tensor name -> the indices of the ops that read it, in graph order."""
    consumers: dict[str, list[int]] = {}
    for i, op in enumerate(g.ops):
        for n in op.inputs:
            consumers.setdefault(n, []).append(i)
    return consumers


def _only_reader(g: Graph, consumers: dict[str, list[int]], name: str, kind: str) -> int | None:
    """The index of the one op that reads ``name``, when it is a ``kind`` reading it as its first input
    and ``name`` is not a graph output; else None."""
    cs = consumers.get(name, [])
    if name in g.outputs or len(cs) != 1 or g.ops[cs[0]].op != kind or g.ops[cs[0]].inputs[0] != name:
        return None
    return cs[0]


def _fold_clamp(g: Graph, consumers: dict[str, list[int]], out: str, lo: int, hi: int, group: list[int],
                internal: set[str]) -> tuple[str, int, int]:
    """A fused group's output ``out`` with saturation bounds [lo, hi]: when its only reader is a CLAMP,
    that CLAMP joins the group (``group``, ``internal`` updated) and its bounds narrow [lo, hi].
    Returns the group's output tensor and bounds."""
    k = _only_reader(g, consumers, out, "CLAMP")
    if k is None:
        return out, lo, hi
    c = g.ops[k]
    group.append(k)
    internal.add(out)
    return c.outputs[0], max(lo, int(c.attrs["min"])), min(hi, int(c.attrs["max"]))


def _is_scale(op: Op, multiplier: int, shift: int, input_zp: int | None = 0, output_zp: int | None = 0) -> bool:
    """``op`` is a per-tensor RESCALE by exactly ``multiplier * 2^-shift`` (zero points as given, None: any)."""
    a = op.attrs
    return (op.op == "RESCALE" and list(a["multiplier"]) == [multiplier] and list(a["shift"]) == [shift]
            and (input_zp is None or int(a.get("input_zp", 0)) == input_zp)
            and (output_zp is None or int(a.get("output_zp", 0)) == output_zp) and bool(a.get("scale32", True)))


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
    from ..reference.ops import add, rescale, table

    if list(ops) not in (_SOFTMAX_ONE_LEVEL, _SOFTMAX_TWO_LEVEL) or any(
            o.op not in ((want,) if isinstance(want, str) else want) for o, want in ((ops[r], _SOFTMAX_ROLES[r]) for r in ops)):
        return None
    up = (1 << 30, 30 - 7)  # x 2^7: the exact-knot TABLE index
    if not (_is_scale(ops["x32"], 1 << 30, 30, input_zp=None) and _is_scale(ops["y"], 1 << 30, 30, output_zp=None)
            and _is_scale(ops["a_lo_down"], 1 << 30, 37)):
        return None
    two = "b" in ops
    if two:
        k = int(meta["split_bits"])
        if not (_is_scale(ops["a"], 1 << 30, 30 + k) and _is_scale(ops["a_up"], 1 << 30, 30 - k)
                and _is_scale(ops["idx_a"], *up) and _is_scale(ops["idx_b"], *up) and _is_scale(ops["b_lo_down"], 1 << 30, 37)):
            return None
    elif not _is_scale(ops["idx"], *up):
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
    consumers = _consumers(g)
    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for op in g.ops:
        meta = op.attrs.get("softmax")
        if not isinstance(meta, dict):
            continue
        internal, out = set(meta["internal"]), meta["output"]
        group = _group(g, consumers, internal, out)
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
    return _rebuild(g, replace, drop, removed, added)


#: Accumulator ops whose kernels take a ``requant`` block: input dtype -> (accumulator dtype, output
#: dtype, RESCALE's scale32).
_REQUANT_OPS = ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED")
_REQUANT_TYPES = {"int8": ("int32", "int8", True), "int16": ("int48", "int16", False)}


def fuse_requant(g: Graph) -> Graph:
    """A copy of ``g`` in which every CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED followed by its accumulator's only reader,
    a RESCALE (input zero point 0, to int8 from int32 or to int16 from int48), and optionally by that
    RESCALE's only reader, a CLAMP, is one op of the accumulator's kind: inputs ``[x, w, b, requant]``,
    output the RESCALE's (or the CLAMP's) tensor, ``attrs["requant"] = True``, placed where the
    accumulator op was.  ``requant`` is a new int32 constant ``{output_zp, out_min, out_max, m[0], s[0],
    ...}`` (a per-tensor RESCALE's multiplier repeated per channel; [out_min, out_max] the output dtype's
    range, narrowed to the CLAMP's bounds): what ``tabula_conv2d_<t>`` / ``tabula_fully_connected_<t>``
    / ``tabula_depthwise_conv2d_<t>`` compute from it equals the op sequence bit for bit.  Intermediates that are graph outputs, or have
    other readers, keep the sequence as it is.  ``g`` is not modified."""
    consumers = _consumers(g)

    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for i, op in enumerate(g.ops):
        if op.op not in _REQUANT_OPS or len(op.inputs) != 3 or op.attrs.get("requant"):
            continue
        acc = op.outputs[0]
        j = _only_reader(g, consumers, acc, "RESCALE")
        want = _REQUANT_TYPES.get(g.tensors[op.inputs[0]].dtype)
        if j is None or want is None:
            continue
        r = g.ops[j]
        out = r.outputs[0]
        if (g.tensors[acc].dtype != want[0] or g.tensors[out].dtype != want[1]
                or bool(r.attrs.get("scale32", True)) != want[2] or int(r.attrs.get("input_zp", 0)) != 0):
            continue
        out_c = g.tensors[acc].shape[-1]
        m, sh = [int(v) for v in r.attrs["multiplier"]], [int(v) for v in r.attrs["shift"]]
        if len(m) == 1:
            m, sh = m * out_c, sh * out_c
        if len(m) != out_c:
            continue
        lo, hi = dtypes.range_of(want[1])
        group, internal = [j], {acc}
        out, lo, hi = _fold_clamp(g, consumers, out, lo, hi, group, internal)
        block = np.array([int(r.attrs.get("output_zp", 0)), lo, hi] + [v for pair in zip(m, sh) for v in pair], np.int64)
        name = f"{out}__requant"
        added[name] = (Tensor(name, (block.size,), "int32"), block)
        replace[i] = Op(op.op, [*op.inputs, name], [out], {**op.attrs, "requant": True}, op.source)
        drop.update(group)
        removed |= internal
    if not replace:
        return g
    return _rebuild(g, replace, drop, removed, added)


def folded_bias(w: np.ndarray, b: np.ndarray, input_zp: int) -> np.ndarray | None:
    """``b[o] - input_zp * sum(w[o])`` (the sum over every weight of output channel ``o``, ``w``'s first
    axis) as int64, or None when a value falls outside int32."""
    folded = b.astype(np.int64).reshape(-1) - input_zp * w.astype(np.int64).reshape(w.shape[0], -1).sum(axis=1)
    lo, hi = dtypes.range_of("int32")
    return None if folded.min() < lo or folded.max() > hi else folded


def fold_input_zp(g: Graph) -> Graph:
    """A copy of ``g`` in which the input zero point of every int8 CONV2D and FULLY_CONNECTED with
    symmetric weights (``weight_zp`` 0) is folded into its bias at build time, so the kernel never
    sums constant weights at run time: bias' = bias - input_zp * sum(w[o]) over all of the output
    channel's weights (every tap, padded or not), a new int32 constant ``<y>__bias_folded`` (the old
    bias goes when nothing else reads it), and ``attrs["folded"] = True``.

    * FULLY_CONNECTED has no padding: ``sum_i (x - zp) w = sum_i x w - zp sum_i w`` exactly, so
      ``tabula_fully_connected_s8`` runs with bias' and input_zp 0 (its own contract).
    * CONV2D: a padded tap contributes ``(zp - zp) w = 0``; with the full-kernel sum folded the padded
      taps must read as ``zp``: ``tabula_conv2d_s8_folded`` (pad_value = input_zp) computes
      ``bias' + sum_all x~ w`` with ``x~`` = zp in the padding, which equals TOSA CONV2D.

    The IR and the reference keep the TOSA op.  An op whose bias' does not fit int32 stays as it is
    (the kernels' int32 accumulator is then only proven for the unfolded sum; the bound pass proves
    ``|bias| + xmax * sum|w|`` and ``|zp * sum w| <= 128 * sum|w|``, so bias' nearly always fits).
    ``g`` is not modified."""
    replace: dict[int, Op] = {}
    added: dict[str, tuple] = {}
    old_bias: set[str] = set()
    for i, op in enumerate(g.ops):
        if (op.op not in ("CONV2D", "FULLY_CONNECTED") or op.attrs.get("folded")
                or g.tensors[op.inputs[0]].dtype != "int8" or int(op.attrs.get("weight_zp", 0)) != 0):
            continue
        w, b = g.constants.get(op.inputs[1]), g.constants.get(op.inputs[2])
        if w is None or b is None:
            continue
        folded = folded_bias(w, b, int(op.attrs.get("input_zp", 0)))
        if folded is None:
            continue
        name = f"{op.outputs[0]}__bias_folded"
        added[name] = (Tensor(name, (folded.size,), "int32"), folded)
        old_bias.add(op.inputs[2])
        replace[i] = Op(op.op, [op.inputs[0], op.inputs[1], name, *op.inputs[3:]], list(op.outputs),
                        {**op.attrs, "folded": True}, op.source)
    if not replace:
        return g
    still_read = {n for i, op in enumerate(g.ops) if i not in replace for n in op.inputs}
    removed = {n for n in old_bias if n not in still_read and n not in g.outputs}
    return _rebuild(g, replace, set(), removed, added)


FUSED_ADD_REQUANT = "ADD_REQUANT"


def fuse_add_requant(g: Graph) -> Graph:
    """A copy of ``g`` in which every ADD / SUB of two activations as the lowering emits it --
    ``RESCALE a -> int32``, ``RESCALE b -> int32`` (per-tensor, scale32, output zero point 0; each
    read only by the ADD / SUB), the ADD / SUB of equal shapes (no broadcast), its only reader a
    per-tensor ``RESCALE`` back to the inputs' type (int8 or int16; input zero point 0), and
    optionally that RESCALE's only reader, a CLAMP -- is one ``ADD_REQUANT`` op: inputs
    ``[a, b, params]``, output the RESCALE's (or CLAMP's) tensor, placed where the ADD / SUB was.
    ``params`` is a new int32 constant ``{a_zp, a_m, a_s, b_zp, b_m, b_s, subtract, output_zp,
    out_min, out_max, m, s}`` (``[out_min, out_max]``: the type's range narrowed to the CLAMP's
    bounds): what ``tabula_add_requant_<t>`` computes from it equals the sequence bit for bit.
    An intermediate that is a graph output or has another reader keeps the sequence as it is.
    ``g`` is not modified."""
    consumers = _consumers(g)
    producer = {n: i for i, op in enumerate(g.ops) for n in op.outputs}

    def per_tensor(r: Op) -> tuple[int, int] | None:
        a = r.attrs
        if len(a["multiplier"]) != 1 or not bool(a.get("scale32", True)):
            return None
        return int(a["multiplier"][0]), int(a["shift"][0])

    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for i, op in enumerate(g.ops):
        if op.op not in ("ADD", "SUB") or len(op.inputs) != 2 or op.inputs[0] == op.inputs[1]:
            continue
        acc = op.outputs[0]
        if g.tensors[acc].dtype != "int32" or any(g.tensors[n].shape != g.tensors[acc].shape for n in op.inputs):
            continue
        terms = []
        for n in op.inputs:
            p = producer.get(n)
            r = g.ops[p] if p is not None else None
            if (r is None or r.op != "RESCALE" or n in g.outputs or consumers.get(n) != [i]
                    or int(r.attrs.get("output_zp", 0)) != 0 or per_tensor(r) is None):
                break
            terms.append((p, r))
        if len(terms) != 2:
            continue
        t = g.tensors[terms[0][1].inputs[0]].dtype
        if t not in ("int8", "int16") or g.tensors[terms[1][1].inputs[0]].dtype != t:
            continue
        j = _only_reader(g, consumers, acc, "RESCALE")
        if j is None:
            continue
        r = g.ops[j]
        out = r.outputs[0]
        if g.tensors[out].dtype != t or int(r.attrs.get("input_zp", 0)) != 0 or per_tensor(r) is None:
            continue
        lo, hi = dtypes.range_of(t)
        group, internal = [terms[0][0], terms[1][0], j], {*op.inputs, acc}
        out, lo, hi = _fold_clamp(g, consumers, out, lo, hi, group, internal)
        params = []
        for _, rt in terms:
            params += [int(rt.attrs.get("input_zp", 0)), *per_tensor(rt)]
        params += [int(op.op == "SUB"), int(r.attrs.get("output_zp", 0)), lo, hi, *per_tensor(r)]
        name = f"{out}__add_requant"
        added[name] = (Tensor(name, (len(params),), "int32"), np.array(params, np.int64))
        replace[i] = Op(FUSED_ADD_REQUANT, [terms[0][1].inputs[0], terms[1][1].inputs[0], name], [out], {}, op.source)
        drop.update(group)
        removed |= internal
    if not replace:
        return g
    return _rebuild(g, replace, drop, removed, added)


def fuse_pad(g: Graph) -> Graph:
    """A copy of ``g`` in which every PAD of the height and width only (NHWC ``pad_before`` /
    ``pad_after`` ``[0, t, l, 0]`` / ``[0, b, r, 0]``) with the reader's input zero point as its value,
    read only by a CONV2D or DEPTHWISE_CONV2D as its input, is folded into that op's own ``pad``
    (``[top + t, bottom + b, left + l, right + r]``): the kernels treat padded taps as the input zero
    point, exactly what the PAD wrote, so the results are the same bits with no padded copy in the
    arena and no copying pass (TFLite's SAME padding of a stride-2 conv, exported as ``F.pad``).
    A PAD whose output is a graph output or has another reader stays.  ``g`` is not modified."""
    consumers = _consumers(g)
    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    for i, op in enumerate(g.ops):
        if op.op != "PAD":
            continue
        out = op.outputs[0]
        cs = consumers.get(out, [])
        if out in g.outputs or len(cs) != 1 or cs[0] in replace:
            continue
        c = g.ops[cs[0]]
        pb, pa = [int(v) for v in op.attrs["pad_before"]], [int(v) for v in op.attrs["pad_after"]]
        if (c.op not in ("CONV2D", "DEPTHWISE_CONV2D") or c.inputs[0] != out or len(pb) != 4
                or pb[0] or pb[3] or pa[0] or pa[3] or int(op.attrs["pad_value"]) != int(c.attrs.get("input_zp", 0))):
            continue
        pt, pbot, pl, pr = (int(v) for v in c.attrs["pad"])
        pad = [pt + pb[1], pbot + pa[1], pl + pb[2], pr + pa[2]]
        replace[cs[0]] = Op(c.op, [op.inputs[0], *c.inputs[1:]], list(c.outputs), {**c.attrs, "pad": pad}, c.source)
        drop.add(i)
        removed.add(out)
    if not replace:
        return g
    return _rebuild(g, replace, drop, removed, {})


def fuse_all(g: Graph) -> Graph:
    """Every codegen fusion, in the order :func:`tabula.codegen.generate` applies them: the int16
    table sequences, softmax, PAD into convolutions, requantization into the accumulator kernels,
    ADD / SUB with their RESCALEs, then the input zero points folded into the biases.  ``g`` is not
    modified."""
    return fold_input_zp(fuse_add_requant(fuse_requant(fuse_pad(fuse_softmax(fuse_table16(g))))))
