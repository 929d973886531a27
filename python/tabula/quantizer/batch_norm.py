"""BatchNorm before quantization: folded into the conv / linear before it, else a per-channel 1x1
depthwise conv -- so PT2E observes and quantizes what the device computes, and no BatchNorm is left.

Eval-mode BatchNorm (PyTorch ``BatchNorm1d`` / ``BatchNorm2d``, channel = dim 1) is a per-channel
affine map ``y = x*a + s`` with ``a = gamma / sqrt(running_var + eps)``, ``s = beta - running_mean*a``
(``gamma = 1``, ``beta = 0`` when ``affine=False``), computed here in float64.

* **Folded** into a conv1d / conv2d (any groups, padding, dilation) whose only user is the BatchNorm
  and whose weight (and bias) no other node reads: ``w'[o] = w[o]*a[o]``, ``bias'[o] = bias[o]*a[o] + s[o]``;
  the same for a linear on a 2-D input ``[N, C]`` (BatchNorm1d over its output features).  The float
  weights are replaced *before* calibration, so the folded weights are what get quantized.
* **Otherwise** -- BatchNorm as the first op, after an add / pool / relu / cat, after a conv with
  other users or shared weights, after a linear on a 3-D input -- it becomes a depthwise conv with
  weight ``a`` and bias ``s`` (``groups = C``, kernel 1): conv2d on ``[N, C, H, W]``, conv1d on
  ``[N, C, L]``, and on ``[N, C]`` a conv2d between two reshapes (``[N, C, 1, 1]``: no data moves).  It is then a
  WEIGHTED op like any conv (per-channel int8 weights -- one weight per channel, so each quantizes
  exactly to +-127 --, an int32 / int48 bias, its own output grid) and runs as DEPTHWISE_CONV2D 1x1.

torchao's ``prepare_pt2e`` folds conv+BN and linear+BN itself (``_fuse_conv_bn_``,
``_fuse_linear_bn_``), but (torchao 0.18) it also folds into a conv whose output feeds other nodes
(they then see the normalized values), drops the BatchNorm of a second conv that shares the weight
(``fake_fuse``), and leaves any other BatchNorm as a float op tabula cannot lower.  This pass runs
first (:func:`tabula.quantizer.quantize`, and :meth:`TabulaQuantizer.transform_for_annotation` for
direct PT2E users), so torchao finds no BatchNorm left.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.fx import GraphModule, Node

from ..fx import arg, canonical_op, fake_value

__all__ = ["BATCH_NORM_OPS", "unsupported", "fold_batch_norms"]

aten = torch.ops.aten

#: The aten BatchNorm ops this pass handles (``torch.export`` gives ``batch_norm``; a program run
#: through ``run_decompositions`` has ``_native_batch_norm_legit_no_training`` + ``getitem``).
BATCH_NORM_OPS = ("aten.batch_norm", "aten._native_batch_norm_legit_no_training")

_CONV = ("aten.conv1d", "aten.conv2d")


def _parts(node: Node):
    """``(input, gamma, beta, running_mean, running_var, eps, training)`` of a BatchNorm node."""
    if canonical_op(node.target) == "aten.batch_norm":
        # batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
        return (node.args[0], arg(node, 1, "weight", None), arg(node, 2, "bias", None), arg(node, 3, "running_mean", None),
                arg(node, 4, "running_var", None), float(arg(node, 7, "eps", 1e-5)), bool(arg(node, 5, "training", False)))
    # _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps)
    return (node.args[0], arg(node, 1, "weight", None), arg(node, 2, "bias", None), node.args[3], node.args[4],
            float(arg(node, 6, "eps", 1e-5)), False)


def _outputs(node: Node) -> list[Node]:
    """The nodes that carry the BatchNorm's normalized output: the node itself, or (the tuple-valued
    ``_native_batch_norm_legit_no_training``) its ``getitem(., 0)`` users."""
    if canonical_op(node.target) == "aten.batch_norm":
        return [node]
    return [u for u in node.users if u.op == "call_function" and canonical_op(u.target) == "_operator.getitem"
            and u.args[1] == 0]


def unsupported(node: Node) -> str | None:
    """Why the captured BatchNorm ``node`` cannot be rewritten (listed before calibration), or None."""
    x, gamma, beta, mean, var, _, training = _parts(node)
    if mean is None or var is None:
        return "without running statistics (track_running_stats=False normalizes by each batch's own statistics)"
    if training:
        return "in training mode (call model.eval() before torch.export: tabula folds the running statistics)"
    if any(t is not None and getattr(t, "op", None) != "get_attr" for t in (gamma, beta, mean, var)):
        return "whose parameters or statistics are not constants"
    v = fake_value(x)
    if v is None:
        return "without shape information (capture the model with torch.export)"
    if v.dim() not in (2, 3, 4):
        return f"on a {v.dim()}-D input (tabula handles BatchNorm1d on [N, C] or [N, C, L] and BatchNorm2d)"
    if canonical_op(node.target) != "aten.batch_norm":
        if any(not (u.op == "call_function" and canonical_op(u.target) == "_operator.getitem" and u.args[1] == 0)
               for u in node.users):
            return "whose batch statistics outputs are used"
    return None


# -- graph-module attributes ------------------------------------------------------------------------
def _get(gm: GraphModule, target: str) -> torch.Tensor:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj.detach()


def _set(gm: GraphModule, target: str, value: torch.Tensor) -> None:
    """Replace attribute ``target`` by a *new* tensor (never in place: the user's module may share it)."""
    *path, name = target.split(".")
    mod = gm
    for part in path:
        mod = getattr(mod, part)
    if name in mod._parameters:
        mod._parameters[name] = nn.Parameter(value, requires_grad=False)
    elif name in mod._buffers:
        mod._buffers[name] = value
    else:
        setattr(mod, name, value)


def _new_attr(gm: GraphModule, base: str, value: torch.Tensor, before: Node, like: Node) -> Node:
    """A new parameter ``base`` (made unique) on ``gm`` and its ``get_attr`` node before ``before``."""
    name, i = base, 1
    while hasattr(gm, name):
        name, i = f"{base}_{i}", i + 1
    gm.register_parameter(name, nn.Parameter(value, requires_grad=False))
    with gm.graph.inserting_before(before):
        n = gm.graph.get_attr(name)
    val = like.meta.get("val")
    if val is not None and hasattr(val, "fake_mode"):
        n.meta["val"] = val.fake_mode.from_tensor(value, static_shapes=True)
    return n


def _exclusive(gm: GraphModule, attr: Node | None, user: Node) -> bool:
    """``attr`` is None, or a constant that no node but ``user`` reads (through any get_attr of it)."""
    if attr is None:
        return True
    if attr.op != "get_attr":
        return False
    readers = {u for n in gm.graph.nodes if n.op == "get_attr" and n.target == attr.target for u in n.users}
    return readers == {user}


def _affine(gm: GraphModule, node: Node) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a, b)`` float64 [C] of the BatchNorm's ``y = x*a + b``."""
    _, gamma, beta, mean, var, eps, _ = _parts(node)
    mean, var = _get(gm, mean.target).double(), _get(gm, var.target).double()
    g = _get(gm, gamma.target).double() if gamma is not None else torch.ones_like(mean)
    bt = _get(gm, beta.target).double() if beta is not None else torch.zeros_like(mean)
    a = g / torch.sqrt(var + eps)
    return a, bt - mean * a


def _foldable(gm: GraphModule, producer, bn: Node) -> bool:
    if not isinstance(producer, Node) or producer.op != "call_function" or len(producer.users) != 1:
        return False
    name = canonical_op(producer.target)
    if name == "aten.linear":
        v = fake_value(producer.args[0])
        if v is None or v.dim() != 2:  # BatchNorm1d normalizes dim 1; linear acts on the last dim
            return False
    elif name not in _CONV:
        return False
    w, b = producer.args[1], arg(producer, 2, "bias", None)
    return isinstance(w, Node) and w.op == "get_attr" and _exclusive(gm, w, producer) and _exclusive(gm, b, producer)


def _fold(gm: GraphModule, producer: Node, a: torch.Tensor, b: torch.Tensor) -> None:
    w_node, b_node = producer.args[1], arg(producer, 2, "bias", None)
    w = _get(gm, w_node.target)
    _set(gm, w_node.target, (w.double() * a.reshape(-1, *([1] * (w.dim() - 1)))).to(w.dtype))
    if b_node is not None:
        _set(gm, b_node.target, (_get(gm, b_node.target).double() * a + b).to(w.dtype))
        return
    new_b = _new_attr(gm, f"{str(w_node.target).replace('.', '_')}_bn_bias", b.to(w.dtype), producer, w_node)
    if "bias" in producer.kwargs:
        producer.kwargs = {**producer.kwargs, "bias": new_b}
    else:
        args = list(producer.args)
        args += [None] * (3 - len(args))
        args[2] = new_b
        producer.args = tuple(args)


def _copy_meta(dst: Node, src: Node, val) -> None:
    for key in ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node"):
        if key in src.meta:
            dst.meta[key] = src.meta[key]
    if val is not None:
        dst.meta["val"] = val


def _depthwise(gm: GraphModule, bn: Node, x: Node, a: torch.Tensor, b: torch.Tensor) -> Node:
    """Insert the 1x1 depthwise conv computing ``x*a + b`` (see the module doc) before ``bn``; returns
    the node carrying the result."""
    xv, yv = fake_value(x), bn.meta.get("val")
    if isinstance(yv, (tuple, list)):
        yv = yv[0]
    rank = xv.dim()
    c = a.numel()
    base = f"{bn.name}_as_depthwise"
    kernel = (1,) if rank == 3 else (1, 1)  # conv1d on [N, C, L]; conv2d otherwise
    w_node = _new_attr(gm, f"{base}_weight", a.to(xv.dtype).reshape(c, 1, *kernel), bn, x)
    b_node = _new_attr(gm, f"{base}_bias", b.to(xv.dtype), bn, x)
    g = gm.graph
    with g.inserting_before(bn):
        src = x
        if rank == 2:  # [N, C] -> [N, C, 1, 1]: NHWC [N, 1, 1, C] holds the same bytes (a free RESHAPE)
            n = int(xv.shape[0])
            src = g.call_function(aten.reshape.default, (x, [n, c, 1, 1]))
            _copy_meta(src, bn, xv.reshape(n, c, 1, 1))
        if rank == 3:
            conv = g.call_function(aten.conv1d.default, (src, w_node, b_node, [1], [0], [1], c))
        else:
            conv = g.call_function(aten.conv2d.default, (src, w_node, b_node, [1, 1], [0, 0], [1, 1], c))
        _copy_meta(conv, bn, yv.reshape(*yv.shape, 1, 1) if rank == 2 and yv is not None else yv)
        if rank != 2:
            return conv
        out = g.call_function(aten.reshape.default, (conv, [n, c]))
        _copy_meta(out, bn, yv)
        return out


def fold_batch_norms(gm: GraphModule) -> int:
    """Rewrite every BatchNorm of the captured float graph ``gm`` in place (module doc): fold it into
    the conv / linear before it, else turn it into a 1x1 depthwise conv.  A BatchNorm that
    :func:`unsupported` refuses is left for :func:`tabula.quantizer.annotator.check_supported` to
    list.  Never changes a tensor in place (the user's model may share them).  Returns the number of
    BatchNorms rewritten."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or canonical_op(node.target) not in BATCH_NORM_OPS or unsupported(node):
            continue
        x = node.args[0]
        a, b = _affine(gm, node)
        if _foldable(gm, x, node):
            _fold(gm, x, a, b)
            result = x
        else:
            result = _depthwise(gm, node, x, a, b)
        for out in _outputs(node):
            out.replace_all_uses_with(result)
            if out is not node:
                gm.graph.erase_node(out)
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return count
