"""What the convolution lowerings (``conv2d.py``, ``conv1d.py``) share.

* PyTorch's padding -- integers, ``"valid"`` or ``"same"`` -- as TOSA's explicit ``[before, after]``
  per spatial axis.  ``"same"`` is PyTorch's definition (``aten/src/ATen/native/Convolution.cpp``):
  total ``d*(k-1)``, ``before = total // 2``, ``after = total - before`` (the odd one at the bottom /
  right); PyTorch allows it at stride 1 only.
* ``groups`` (PyTorch weight ``[Cout, Cin/G, KH, KW]``):
    - ``G == 1``: CONV2D, weights OHWI;
    - ``G == Cin`` (depthwise, channel multiplier ``M = Cout / Cin``): DEPTHWISE_CONV2D, weights
      ``[KH, KW, Cin, M]`` -- PyTorch's output channel ``o`` reads input channel ``o // M`` and TOSA's
      ``c*M + m`` is the same number;
    - ``1 < G < Cin``: per group a SLICE of its ``Cin/G`` input channels, a CONV2D and its RESCALE into
      a group output on the node's output grid, then one CONCAT along the channels.  Chosen over a
      ``groups`` attribute on CONV2D (not TOSA: the TOSA serializer, Vela and the conv kernels would all
      need it) and over one CONV2D with block-diagonal weights (G times the MACs and the weight bytes):
      the extra cost is one copy of the input and of the output, O(activations), against
      O(activations x K x Cin/G) MACs, and every op stays a TOSA op with its existing kernel.
* The limits listed before calibration (:func:`unsupported`).

Layouts: activations NHWC on the device; the caller hands NHWC ``x`` / ``out`` (a 1-D conv passes its
``[N, 1, L, C]`` view).
"""
from __future__ import annotations

import numpy as np

from ...errors import LoweringError
from ...fx import arg, fake_value, node_source
from ...ir import Op
from ._common import weighted


def padding_pairs(padding, kernel: list[int], dilation: list[int], src: str) -> list[list[int]]:
    """``[[before, after], ...]`` per spatial axis of a conv's ``padding`` argument (an int, a list of
    ints, ``"valid"`` or ``"same"``; see the module doc).  LoweringError for any other string."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [[0, 0] for _ in range(nd)]
        if padding == "same":
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out.append([total // 2, total - total // 2])
            return out
        raise LoweringError(f"{src}: conv padding={padding!r} is not 'same', 'valid' or integers")
    p = [int(padding)] * nd if isinstance(padding, int) else [int(v) for v in padding]
    if len(p) == 1:
        p = p * nd
    return [[v, v] for v in p]


def unsupported(node, rank: int, what: str) -> str | None:
    """Why a captured (float) conv node cannot be lowered, or None: an input of another rank than
    ``rank`` (unbatched), weights that are not a constant parameter, or a bias that is not one."""
    x = fake_value(node.args[0]) if len(node.args) else None
    if x is not None and x.dim() != rank:
        return f"on a {x.dim()}-D input (tabula needs the batched {what} layout; add the batch dimension)"
    w = node.args[1] if len(node.args) > 1 else None
    if getattr(w, "op", None) != "get_attr":
        return "whose weight is not a constant parameter (pass the weight as a module parameter)"
    b = arg(node, 2, "bias", None)
    if b is not None and getattr(b, "op", None) != "get_attr":
        return "whose bias is not a constant parameter"
    return None


def conv_nhwc(ctx, node, x, out, w_q: np.ndarray, w_scale: np.ndarray, stride, dilation, pad, groups: int) -> None:
    """Lower a conv node onto NHWC tensors: ``x`` [N, H, W, Cin], ``out`` [N, OH, OW, Cout] (the node's
    output grid), PyTorch weights ``w_q`` [Cout, Cin/G, KH, KW] with per-output-channel ``w_scale``;
    ``pad`` [top, bottom, left, right].  Emits CONV2D, DEPTHWISE_CONV2D or the grouped sequence (module
    doc), each followed by its per-channel RESCALE."""
    src = node_source(node)
    n, h, w, cin = x.shape
    cout, cg, kh, kw = w_q.shape
    if groups < 1 or cin % groups or cout % groups or cg * groups != cin:
        raise LoweringError(f"{src}: groups={groups} does not divide {cin} input / {cout} output channels")
    attrs = {"pad": [int(v) for v in pad], "stride": [int(v) for v in stride], "dilation": [int(v) for v in dilation]}
    if groups == 1:
        weighted(ctx, node, x, out, w_q, w_scale, np.transpose(w_q, (0, 2, 3, 1)), "CONV2D", attrs)
        return
    if groups == cin:  # depthwise: [C*M, 1, KH, KW] -> [KH, KW, C, M]
        layout = np.ascontiguousarray(w_q.reshape(cin, cout // cin, kh, kw).transpose(2, 3, 0, 1))
        weighted(ctx, node, x, out, w_q, w_scale, layout, "DEPTHWISE_CONV2D", attrs)
        return
    og = cout // groups
    parts = []
    for g in range(groups):
        xg = ctx.temp(f"{node.name}_g{g}_in", (n, h, w, cg), x.dtype, x.scale, x.zero_point)
        ctx.graph.add_op(Op("SLICE", [x.name], [xg.name], {"start": [0, 0, 0, g * cg], "size": [n, h, w, cg]}, src))
        yg = ctx.temp(f"{node.name}_g{g}", (*out.shape[:3], og), out.dtype, out.scale, out.zero_point)
        sl = slice(g * og, (g + 1) * og)
        weighted(ctx, node, xg, yg, w_q[sl], w_scale[sl], np.transpose(w_q[sl], (0, 2, 3, 1)), "CONV2D", attrs, channels=sl)
        parts.append(yg.name)
    ctx.graph.add_op(Op("CONCAT", parts, [out.name], {"axis": 3}, src))
