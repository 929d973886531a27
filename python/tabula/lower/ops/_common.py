"""Helpers shared by the op lowerings: argument defaults and the requantizing RESCALE."""
from __future__ import annotations

import numpy as np

from ...qmath import quantize_multiplier
from ..ir import Op, Tensor


def pair(v, default) -> list[int]:
    """A PyTorch int-or-list 2-D argument (stride, padding, ...) as ``[a, b]``."""
    if v is None:
        v = default
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    return v * 2 if len(v) == 1 else v


def arg(node, index: int, name: str, default):
    """Positional-or-keyword argument of an FX node, with PyTorch's default."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def emit_rescale(ctx, acc: Tensor, acc_scales: np.ndarray, out: Tensor, source: str) -> None:
    """Append RESCALE ``acc`` (int32, per-channel scale ``acc_scales`` [C], zero point 0) -> ``out``.

    multiplier/shift per channel from ``acc_scale[c] / out.scale`` (:func:`quantize_multiplier`);
    one entry when all channels share the same factor.
    """
    pairs = [quantize_multiplier(float(s) / float(out.scale)) for s in acc_scales]
    if len(set(pairs)) == 1:
        pairs = pairs[:1]
    ctx.graph.add_op(
        Op(
            "RESCALE",
            [acc.name],
            [out.name],
            {
                "input_zp": 0,
                "output_zp": int(out.zero_point),
                "multiplier": [m for m, _ in pairs],
                "shift": [s for _, s in pairs],
            },
            source,
        )
    )
