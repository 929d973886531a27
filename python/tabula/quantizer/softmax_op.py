"""``tabula::softmax``: the scaled, masked softmax a decomposed attention ends in, as one torch op.

``torch.ops.tabula.softmax(x, dim, scale, keep)`` is ``softmax(scale * x)`` along ``dim`` over the
positions where the boolean ``keep`` (broadcast against ``x``; None: every position) is True, and 0
elsewhere -- PyTorch's ``scaled_dot_product_attention`` with ``scale``, ``is_causal`` or a boolean
``attn_mask`` (an additive float mask's ``-inf`` entries).  A row with no kept position is refused
(:func:`tabula.quantizer.decompose_ops_pass.unsupported`; PyTorch gives NaN there).

Why one op: the scale and the mask are facts about the softmax's *input grid*, not values to
quantize.  PT2E calibrates the unscaled scores (``q @ k^T``) and the lowering folds ``scale`` into the
softmax's input scale (exact: the integer plan sees ``scale * s_in``), and the mask into the integer
sequence (masked positions leave the row's max and its sum: :mod:`tabula.lowering.ops.softmax`).
Quantizing ``scale * scores`` or ``scores + mask`` (with its ``-inf``) as tensors would cost a
rounding, or the whole grid.  Rule: ``rules.FIXED_OUTPUT`` (the output grid is softmax's [0, 1]).
"""
from __future__ import annotations

import torch

__all__ = ["softmax"]


@torch.library.custom_op("tabula::softmax", mutates_args=())
def softmax(x: torch.Tensor, dim: int, scale: float, keep: torch.Tensor | None = None) -> torch.Tensor:
    """``softmax(scale * x, dim)`` over the positions where ``keep`` (bool, broadcastable to ``x``) is
    True; 0 at the others.  float32 in, float32 out, ``x``'s shape."""
    s = x * scale
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim)


@softmax.register_fake
def _(x, dim, scale, keep=None):
    return torch.empty_like(x)
