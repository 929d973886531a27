"""Codegen fold of the input zero point: an int8 CONV2D / FULLY_CONNECTED with symmetric weights gets
``bias - input_zp * sum(w)`` as its bias at build time (CONV2D then calls ``tabula_conv2d_s8_folded``,
whose padded taps read as the zero point): no weight sums at run time."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...ir import Graph, Op, Tensor
from ._graph import rebuild

#: Passes that must run after this one (name -> why); :mod:`tabula.codegen.fusion` checks its order.
MUST_RUN_BEFORE: dict[str, str] = {}


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
    return rebuild(g, replace, set(), removed, added)
