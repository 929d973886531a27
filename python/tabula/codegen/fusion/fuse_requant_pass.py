"""Codegen fusion of requantization into the accumulator kernels: a CONV2D / DEPTHWISE_CONV2D /
FULLY_CONNECTED whose accumulator's only reader is a RESCALE to the input's own type (int32 -> int8,
int48 -> int16) or, at a precision boundary of ``scheme=mixed``, to the other activation type (int48 ->
int8 after an int16 input, int32 -> int16 after an int8 input: the boundary kernel
``tabula_<op>_<in>_<out>``, where the manifest has one), and the CLAMP of a fused activation when it is
that RESCALE's only reader, becomes one accumulator op that requantizes in its epilogue (the kernels'
``requant`` block): no int32 / int48 tensor in the arena."""
from __future__ import annotations

import numpy as np

from ... import dtypes, kernels, requant
from ...ir import Graph, Op, Tensor
from ._graph import consumers_of, fold_clamp, only_reader, rebuild
from .fold_input_zp_pass import folded_bias

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {
    "fold_input_zp": "fold_input_zp names the folded bias after its op's output, which fuse_requant makes the "
                     "requantized tensor; the other order gives the same numbers under other constant names in model.c; "
                     "and an int8 CONV2D fused across a precision boundary has only a folded kernel "
                     "(tabula_conv2d_s8_s16_folded): fuse_requant fuses it only where fold_input_zp will fold it",
    "fuse_rescale_clamp": "fuse_rescale_clamp would fold the CLAMP after an accumulator's RESCALE into that RESCALE; "
                          "fuse_requant then leaves it alone (a RESCALE with clamp bounds), and the accumulator "
                          "tensor would stay in the arena",
}


#: Accumulator ops whose kernels take a ``requant`` block: input dtype -> (accumulator dtype, RESCALE's
#: scale32); the output is the input's dtype, or the other one where :func:`boundary_kernel` names a kernel.
_REQUANT_OPS = ("CONV2D", "DEPTHWISE_CONV2D", "FULLY_CONNECTED")
_REQUANT_TYPES = {"int8": ("int32", True), "int16": ("int48", False)}


def boundary_kernel(op: str, in_dtype: str, out_dtype: str, folded: bool = False) -> str | None:
    """The C kernel of accumulator op ``op`` with its requantization fused from ``in_dtype`` to
    ``out_dtype``, the other activation type (a precision boundary): ``tabula_<op>_<in>_<out>`` (``folded``:
    the input zero point folded into the bias, ``..._folded``), or None when the manifest has no such
    kernel (the RESCALE then stays its own kernel)."""
    if {in_dtype, out_dtype} != {"int8", "int16"}:
        return None
    name = f"tabula_{op.lower()}_{dtypes.get(in_dtype).sfx}_{dtypes.get(out_dtype).sfx}{'_folded' if folded else ''}"
    return name if name in kernels.names() else None


def _boundary_fuses(g: Graph, op: Op, rescale: Op, x_dtype: str, y_dtype: str) -> bool:
    """Whether codegen has a kernel for ``op`` fused across a precision boundary: its own
    (:func:`boundary_kernel`), or -- an int8 CONV2D, which codegen calls folded -- the folded one when
    :func:`~tabula.codegen.fusion.fold_input_zp` will fold it (symmetric weights, constant weights and
    bias, the folded bias inside int32); an int8 input (int32 -> int16) only where ``rescale`` shifts by 33 or more
    everywhere."""
    if x_dtype == "int8" and min(int(v) for v in rescale.attrs["shift"]) < 33:
        # int32 -> int16: the boundary kernels requantize 4 channels per Helium vector only when every shift is
        # >= 33; below, per value in 64 bits, which costs more than the RESCALE kernel it saves (kws mixed's
        # last pointwise conv: 462,719 against 117,672 + 33,875 instructions; a trained MobileNet's first
        # depthwise 48x48x8 int8 -> int16: 1,556,500)
        return False
    if boundary_kernel(op.op, x_dtype, y_dtype) is not None:
        return True
    if op.op != "CONV2D" or x_dtype != "int8" or boundary_kernel(op.op, x_dtype, y_dtype, folded=True) is None:
        return False
    w, b = g.constants.get(op.inputs[1]), g.constants.get(op.inputs[2])
    return (int(op.attrs.get("weight_zp", 0)) == 0 and w is not None and b is not None
            and folded_bias(w, b, int(op.attrs.get("input_zp", 0))) is not None)


def fuse_requant(g: Graph) -> Graph:
    """A copy of ``g`` in which every CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED followed by its accumulator's only reader,
    a RESCALE (input zero point 0, to int8 from int32 or to int16 from int48; or to the other of int8 /
    int16 where :func:`boundary_kernel` names the kernel: a precision boundary), and optionally by that
    RESCALE's only reader, a CLAMP, is one op of the accumulator's kind: inputs ``[x, w, b, requant]``,
    output the RESCALE's (or the CLAMP's) tensor, ``attrs["requant"] = True``, placed where the
    accumulator op was.  ``requant`` is a new int32 constant, the ``tabula_requant`` block
    :func:`tabula.requant.pack` lays out (a per-tensor RESCALE's multiplier repeated per channel;
    [out_min, out_max] the output dtype's range, narrowed to the CLAMP's bounds): what ``tabula_conv2d_<t>`` / ``tabula_fully_connected_<t>``
    / ``tabula_depthwise_conv2d_<t>`` (at a boundary ``..._<in>_<out>``) compute from it equals the op sequence bit for bit.  Intermediates that are graph outputs, or have
    other readers, keep the sequence as it is.  ``g`` is not modified."""
    consumers = consumers_of(g)

    replace: dict[int, Op] = {}
    drop: set[int] = set()
    removed: set[str] = set()
    added: dict[str, tuple] = {}
    for i, op in enumerate(g.ops):
        if op.op not in _REQUANT_OPS or len(op.inputs) != 3 or op.attrs.get("requant"):
            continue
        acc = op.outputs[0]
        j = only_reader(g, consumers, acc, "RESCALE")
        x_dtype = g.tensors[op.inputs[0]].dtype
        want = _REQUANT_TYPES.get(x_dtype)
        if j is None or want is None:
            continue
        r = g.ops[j]
        out = r.outputs[0]
        y_dtype = g.tensors[out].dtype
        if ("clamp" in r.attrs or g.tensors[acc].dtype != want[0] or y_dtype not in _REQUANT_TYPES
                or (y_dtype != x_dtype and not _boundary_fuses(g, op, r, x_dtype, y_dtype))
                or bool(r.attrs.get("scale32", True)) != want[1] or int(r.attrs.get("input_zp", 0)) != 0):
            continue
        out_c = g.tensors[acc].shape[-1]
        m, sh = [int(v) for v in r.attrs["multiplier"]], [int(v) for v in r.attrs["shift"]]
        if len(m) == 1:
            m, sh = m * out_c, sh * out_c
        if len(m) != out_c:
            continue
        lo, hi = dtypes.range_of(y_dtype)
        group, internal = [j], {acc}
        out, lo, hi = fold_clamp(g, consumers, out, lo, hi, group, internal)
        block = requant.pack(int(r.attrs.get("output_zp", 0)), lo, hi, m, sh).astype(np.int64)
        name = f"{out}__requant"
        added[name] = (Tensor(name, (block.size,), "int32"), block)
        replace[i] = Op(op.op, [*op.inputs, name], [out], {**op.attrs, "requant": True}, op.source)
        drop.update(group)
        removed |= internal
    if not replace:
        return g
    return rebuild(g, replace, drop, removed, added)
