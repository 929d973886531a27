"""Rewrite composite ops of the captured float graph into ops of the rules table, before quantization.

So PT2E observes and quantizes what the device computes (``rules.REWRITTEN`` lists them):

* ``scaled_dot_product_attention(q, k, v, attn_mask, 0, is_causal, scale)`` ->
  ``s = q @ k^T`` (MATMUL), ``p = tabula.softmax(s, -1, scale, keep)`` (:mod:`.softmax_op`: the
  scale folds into the softmax's input scale, the mask into its integer sequence), ``p @ v``.  A
  float mask's finite part is added to ``s`` first (as ``mask / scale``), its ``-inf`` entries are
  the masked positions; a boolean mask and ``is_causal`` give ``keep`` directly.
* ``split`` / ``split_with_sizes`` / ``chunk`` -> one ``slice`` per piece read; ``unbind`` -> one
  ``select`` per piece; ``stack`` -> ``unsqueeze`` each input, then ``cat``.
* ``zeros_like`` / ``ones_like`` / ``full_like`` -> a constant of the output's shape (it depends on
  the input's shape only).
* ``masked_fill(x, mask, v)`` -> ``where(mask, v, x)`` (PyTorch's definition: v where mask is True);
  ``glu(x, dim)`` -> ``a * sigmoid(b)`` on the two halves ``a, b`` of x along dim (PyTorch's ``F.glu``);
  ``pixel_shuffle(x, r)`` / ``pixel_unshuffle(x, r)`` -> reshape, permute, reshape (PyTorch's index maps:
  ``out[n, c, h r + i, w r + j] = x[n, c r^2 + i r + j, h, w]``), data movement on one grid.
* ``group_norm(x, G, w, b, eps)`` -> ``layer_norm`` of ``x.view(N, G, -1)`` over its last dim (the integer
  LayerNorm, :mod:`tabula.qmath.layer_norm`), viewed back to ``[N, C, H, W]``, then ``* w`` and ``+ b`` per
  channel (constants); ``linalg_vector_norm(x, 2, dim, keepdim)`` -> ``sqrt(sum(x * x, dim, keepdim))``,
  ``clamp_min(x, v)`` -> ``clamp(x, v)``, ``expand_as(x, y)`` -> ``expand(x, y.shape)``: so ``F.normalize``
  is ``x / clamp(norm, eps)``, a division by a positive activation (:mod:`.rewrite_div_pass`).
* ``log_softmax(x, dim)`` -> ``d = x - amax(x, dim)``, ``y = d - log(sum(exp(d), dim))`` (keepdim; the
  log-sum-exp with the max taken out, PyTorch's own formulation): REDUCE_MAX on the codes (exact), a SUB
  of two activations on one grid, the exp TABLE, the int32 sum, the log TABLE (``sum >= 1``: the max's own
  ``exp(0)``), a SUB.  Each op rounds once on its own grid, as PT2E simulates it; the error bound is
  :func:`log_softmax_error_bound`.

* ``prelu(x, a)`` -> ``where(x > 0, x, x * a)`` (PyTorch's ``max(0, x) + a * min(0, x)``, the weight per channel
  of dim 1, or one for all): a COMPARISON with the threshold code of 0, a MUL by the constant ``a`` (viewed
  ``[C, 1, ...]``), a SELECT of two operands on one grid (the codes of x copied).
* ``_safe_softmax(x, dim)`` -> ``softmax(x, dim)`` (equal on finite inputs: it differs only on a row that is all
  ``-inf``, which a quantized input cannot hold).
* ``addmm(b, m1, m2, beta, alpha)`` -> ``beta * b + alpha * (m1 @ m2)`` (PyTorch's definition): with ``m2``
  computed from constants only, ``linear(m1, alpha * m2^T, beta * b)`` (FULLY_CONNECTED: the weight and, for a
  1-D ``b``, the bias fold into constants; a 2-D ``b`` is added after); otherwise ``mm`` (MATMUL), then the
  scalings and the add as arithmetic ops.
* ``max.dim(x, dim, keepdim)`` / ``min.dim`` -> ``(amax(x, dim, keepdim), argmax(x, dim, keepdim))`` / ``amin`` and
  ``argmin``, each piece only where it is read (PyTorch's values and indices; the first index on ties, as
  PyTorch's CPU kernel and ARGMAX give it).
* ``tril(x, k)`` / ``triu(x, k)`` -> ``where(mask, x, 0)`` with the constant boolean mask of PyTorch's definition
  over the last two dims (``j - i <= k`` / ``>= k``): SELECT of x's codes and the code of 0.
* ``var(x, dims, correction, keepdim)`` -> ``mean((x - mean(x, dims, keepdim=True))^2, dims, keepdim) * n / (n -
  correction)`` (PyTorch's definition; ``n`` the number of elements reduced; ``var.dim``'s ``unbiased`` is
  correction 1 / 0): the int32 means with their own grids, SUB, MUL, and the factor as one RESCALE.

* ``clamp(x, min, max)`` with a tensor bound (``clamp.Tensor``): a constant bound of one element (0-d, or every
  element alike) -> that number (``clamp(x, lo, hi)``, CLAMP on the codes); any other bound -> ``maximum(x, min)``
  then ``minimum(., max)`` (PyTorch's ``min(max(x, lo), hi)``, elementwise with broadcasting): a constant bound is
  quantized onto x's grid, an activation bound shares it (JOINING: MAXIMUM / MINIMUM on one grid are exact).
* ``constant_pad_nd(x, pad, value)`` -> ``pad(x, pad, "constant", value)`` (the same op: ``F.pad``'s constant mode).
* ``copy(dst, src)`` (``dst.copy_(src)``) -> ``src`` broadcast to ``dst``'s shape (``expand``; the same float dtype):
  ``dst``'s values are overwritten, only its shape is read.
* ``einsum(eq, a, b)`` (one or two operands, no ``...``, no index repeated in an operand) -> ``permute`` each operand
  to ``[batch, free, contracted]`` / ``[batch, contracted, free]``, ``reshape`` to 3-D, ``bmm`` (MATMUL), ``reshape``
  and ``permute`` to the output's index order; an index read by one operand only and not in the output is summed
  first (``sum``), and one operand alone is ``permute`` (+ ``sum``).  PyTorch's ``torch.einsum`` index semantics.
* ``cosine_similarity(a, b, dim, eps)`` -> ``sum(na * nb, dim)`` with ``nx = x * rsqrt(clamp(sum(x * x, dim,
  keepdim), eps^2))`` (PyTorch's definition ``a / max(|a|, eps) . b / max(|b|, eps)``; ATen's own
  ``clamp_min(eps^2)`` of the squared norms): int32 sums, the rsqrt TABLE, MULs.  Bound:
  :func:`cosine_similarity_error_bound`.
* ``max_pool2d_with_indices(x, ...)`` whose indices are not read -> ``max_pool2d(x, ...)`` (the same values).
* ``pow(a, b)`` of two tensors (``pow.Tensor_Tensor``): a constant exponent of one element -> ``pow(a, number)``
  (the TABLE); else ``exp(b * log(a))`` (``a > 0``: PyTorch's value there), the log and exp TABLEs with observed
  output grids and the MUL of two activations between them.  Bound: :func:`pow_error_bound`.

A node :func:`unsupported` refuses is left for :func:`tabula.quantizer.annotator.check_supported`
to list, with the reason.
"""
from __future__ import annotations

import math

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg

from ..fx import arg, canonical_op, fake_value
from . import softmax_op  # noqa: F401  (registers torch.ops.tabula.softmax)

__all__ = ["decompose_ops", "unsupported", "DECOMPOSED", "log_softmax_error_bound", "cosine_similarity_error_bound",
           "pow_error_bound"]

aten = torch.ops.aten

_SPLITS = ("aten.split", "aten.split_with_sizes", "aten.chunk", "aten.unbind")
_EXTREMA = ("aten.max", "aten.min")
_LIKE = ("aten.zeros_like", "aten.ones_like", "aten.full_like")
_SHUFFLES = ("aten.pixel_shuffle", "aten.pixel_unshuffle")
_LOG_SOFTMAX = ("aten.log_softmax", "aten._log_softmax")
_NORMS = ("aten.group_norm", "aten.linalg_vector_norm", "aten.clamp_min", "aten.expand_as")
_SIMPLE = ("aten.prelu", "aten._safe_softmax", "aten.addmm", "aten.tril", "aten.triu", "aten.var")
#: Ops of the rules table rewritten only in some of their uses (:func:`_rewrites`): a clamp with a tensor bound, a pow
#: with a tensor exponent; their other uses are lowered as they are.
_SOME_USES = ("aten.clamp", "aten.pow")
_LONG_TAIL = ("aten.constant_pad_nd", "aten.copy", "aten.einsum", "aten.cosine_similarity",
              "aten.max_pool2d_with_indices", *_SOME_USES)
#: The ops this pass rewrites.
DECOMPOSED = ("aten.scaled_dot_product_attention", "aten.stack", *_SPLITS, *_LIKE, "aten.masked_fill", "aten.glu",
              *_SHUFFLES, *_LOG_SOFTMAX, *_NORMS, *_SIMPLE, *_EXTREMA, *_LONG_TAIL)


def _is_const(n) -> bool:
    return isinstance(n, Node) and n.op == "get_attr"


def unsupported(node: Node) -> str | None:
    """Why the captured ``node`` (one of :data:`DECOMPOSED`) cannot be rewritten, or None."""
    name = canonical_op(node.target)
    if name == "aten.scaled_dot_product_attention":
        mask = arg(node, 3, "attn_mask", None)
        if mask is not None and not _is_const(mask):
            return "with an attn_mask computed from the inputs (give it as a constant buffer)"
        if float(arg(node, 4, "dropout_p", 0.0)) != 0.0:
            return "with dropout_p > 0 (call model.eval(): inference has no dropout)"
        q, k = fake_value(node.args[0]), fake_value(node.args[1])
        if q is not None and k is not None and (q.dim() != k.dim() or q.shape[:-2] != k.shape[:-2]):
            return f"of query {tuple(q.shape)} and key {tuple(k.shape)} (grouped-query attention: repeat the keys)"
        if q is not None and k is not None:
            keep = _keep(node, node.graph.owning_module)
            if keep is not None and not bool(keep.any(-1).all()):
                return "with a mask that hides every key of a query (PyTorch gives NaN there)"
        return None
    if name in _SHUFFLES:
        v = fake_value(node.args[0])
        if v is not None and v.dim() != 4:
            return f"of a {v.dim()}-D tensor (a batched [N, C, H, W] one only)"
    if name == "aten.group_norm":
        v = fake_value(node.args[0])
        if v is not None and v.dim() != 4:
            return f"of a {v.dim()}-D tensor (a batched [N, C, H, W] one only)"
        for i, what in ((2, "weight"), (3, "bias")):
            w = arg(node, i, what, None)
            if w is not None and not _is_const(w):
                return f"with a {what} computed from the inputs"
    if name == "aten.linalg_vector_norm":
        if float(arg(node, 1, "ord", 2)) != 2.0:
            return f"with ord={arg(node, 1, 'ord', 2)} (the 2-norm only)"
        if arg(node, 2, "dim", None) is None:
            return "over every dim (give dim)"
        if node.kwargs.get("dtype") is not None:
            return "with dtype= (leave it unset)"
    if name == "aten.clamp_min" and isinstance(node.args[1], Node):
        return "with a tensor bound"
    if name in _LOG_SOFTMAX:
        if name == "aten.log_softmax" and arg(node, 2, "dtype", None) not in (None, torch.float32):
            return "with dtype= (leave it unset)"
        if name == "aten._log_softmax" and arg(node, 2, "half_to_float", False):
            return "with half_to_float=True"
        v = fake_value(node.args[0])
        if v is not None and v.dim() == 0:
            return "of a 0-D tensor"
    if name == "aten.glu":
        v = fake_value(node.args[0])
        dim = int(arg(node, 1, "dim", -1))
        if v is not None and int(v.shape[dim]) % 2:
            return f"over dim {dim} of odd size {int(v.shape[dim])}"
    if name == "aten.prelu":
        w, v = node.args[1], fake_value(node.args[0])
        if not _is_const(w):
            return "with a weight computed from the inputs"
        n = int(fake_value(w).numel())
        if v is not None and n != 1 and (v.dim() < 2 or int(v.shape[1]) != n):
            return f"with {n} weights on a tensor of shape {tuple(v.shape)} (one per channel of dim 1, or one)"
    if name == "aten._safe_softmax" and arg(node, 2, "dtype", None) not in (None, torch.float32):
        return "with dtype= (leave it unset)"
    if name in ("aten.tril", "aten.triu", "aten.var"):
        v = fake_value(node.args[0])
        if v is not None and v.dim() < 2:
            return f"of a {v.dim()}-D tensor (2-D or more)"
    if name == "aten.var":
        if node.target not in (aten.var.default, aten.var.dim, aten.var.correction):
            return "of this overload"
        if fake_value(node.args[0]) is not None:
            dims, corr, _ = _var_args(node)
            n = math.prod(int(fake_value(node.args[0]).shape[d]) for d in dims)
            if n - corr <= 0:
                return f"with correction {corr:g} over {n} elements (PyTorch gives inf / NaN)"
    if name in _EXTREMA and node.target not in (aten.max.dim, aten.min.dim):
        return "other than over one dim, x.max(dim) (of every element: amax / amin; of two tensors: maximum / minimum)"
    if name in (*_SPLITS, *_EXTREMA) and any(not (u.op == "call_function" and canonical_op(u.target) == "_operator.getitem")
                               for u in node.users):
        return "whose result is used other than piece by piece (y[i])"
    if name in _LONG_TAIL:
        return _long_tail_unsupported(node, name)
    return None


def _rewrites(node: Node) -> bool:
    """Whether :func:`decompose_ops` rewrites ``node``: every :data:`DECOMPOSED` op but those of :data:`_SOME_USES`,
    which only with a tensor bound (clamp) or a tensor exponent (pow); their other uses are lowered as they are."""
    name = canonical_op(node.target)
    if name == "aten.clamp":
        return any(isinstance(arg(node, i, k, None), Node) for i, k in ((1, "min"), (2, "max")))
    if name == "aten.pow":
        return node.target == aten.pow.Tensor_Tensor
    return True


def _einsum_terms(node: Node) -> tuple[list[str], str]:
    """The operand index strings and the output's of an ``einsum`` node (implicit output: the indices read once,
    sorted, as PyTorch forms it)."""
    eq = str(node.args[0]).replace(" ", "")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    ins = lhs.split(",")
    if out is None:
        joined = "".join(ins)
        out = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    return ins, out


def _long_tail_unsupported(node: Node, name: str) -> str | None:
    if name == "aten.copy":
        dst, src = fake_value(node.args[0]), fake_value(node.args[1])
        if dst is not None and src is not None and dst.dtype != src.dtype:
            return f"from {src.dtype} into {dst.dtype} (a conversion: tabula runs float32 models)"
        if isinstance(node.args[0], Node) and len(node.args[0].users) > 1:
            return "whose destination is read elsewhere (read the result of copy_ instead)"
    if name == "aten.max_pool2d_with_indices":
        pieces = all(u.op == "call_function" and canonical_op(u.target) == "_operator.getitem" for u in node.users)
        if not pieces or any(int(u.args[1]) == 1 and u.users for u in node.users):
            return "whose indices are read (tabula computes the values only: max_pool2d)"
    if name == "aten.einsum":
        eq = str(node.args[0])
        if "..." in eq:
            return f"{eq!r} with '...' (name every index)"
        ins, out = _einsum_terms(node)
        ops = list(node.args[1])
        if len(ops) not in (1, 2) or len(ins) != len(ops):
            return f"{eq!r} of {len(ops)} operands (one or two: nest two-operand einsums)"
        if any(len(set(t)) != len(t) for t in ins + [out]):
            return f"{eq!r} with an index repeated in one term (a diagonal)"
        sizes: dict[str, int] = {}
        for t, o in zip(ins, ops):
            v = fake_value(o)
            if v is None or v.dim() != len(t):
                return f"{eq!r} on an operand of another rank"
            for c, n in zip(t, v.shape):
                if sizes.setdefault(c, int(n)) != int(n):
                    return f"{eq!r} with index {c!r} of sizes {sizes[c]} and {int(n)} (broadcasting: expand first)"
    return None


def _const_value(gm: GraphModule, n: Node) -> torch.Tensor:
    obj = gm
    for part in str(n.target).split("."):
        obj = getattr(obj, part)
    return obj.detach()


def _new_const(gm: GraphModule, base: str, value: torch.Tensor, before: Node, like: Node) -> Node:
    name, i = base, 1
    while hasattr(gm, name):
        name, i = f"{base}_{i}", i + 1
    gm.register_buffer(name, value.contiguous())
    with gm.graph.inserting_before(before):
        n = gm.graph.get_attr(name)
    val = fake_value(like)
    if val is not None and hasattr(val, "fake_mode"):
        n.meta["val"] = val.fake_mode.from_tensor(value, static_shapes=True)
    return n


class _Emitter:
    """Inserts call_function nodes before ``at``, each with the source metadata of ``at`` and its
    fake value (the op run on its inputs' fake values)."""

    def __init__(self, gm: GraphModule, at: Node):
        self.gm, self.at = gm, at
        vals = [v for v in (fake_value(a) for a in at.all_input_nodes) if hasattr(v, "fake_mode")]
        self.mode = vals[0].fake_mode if vals else None

    def __call__(self, target, *args, **kwargs) -> Node:
        with self.gm.graph.inserting_before(self.at):
            n = self.gm.graph.call_function(target, args, kwargs)
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node"):
            if key in self.at.meta:
                n.meta[key] = self.at.meta[key]
        fa, fk = map_arg((args, kwargs), lambda a: fake_value(a))
        mode = self.mode or next((v.fake_mode for v in torch.utils._pytree.tree_leaves((fa, fk)) if hasattr(v, "fake_mode")), None)
        if mode is not None:
            with mode:
                n.meta["val"] = target(*fa, **fk)
        return n

    def const(self, base: str, value: torch.Tensor) -> Node:
        return _new_const(self.gm, base, value, self.at, self.at.all_input_nodes[0])


def _keep(node: Node, gm: GraphModule | None) -> torch.Tensor | None:
    """The boolean keep-mask ``[..., L, S]`` of an attention node (None: every position), from
    ``is_causal`` and a constant ``attn_mask`` (bool: True keeps; float: ``-inf`` masks), broadcast to
    ``[L, S]`` or the mask's own leading dims.  Without ``gm`` a mask constant is not read."""
    q, k = fake_value(node.args[0]), fake_value(node.args[1])
    L, S = int(q.shape[-2]), int(k.shape[-2])
    keep = None
    if arg(node, 5, "is_causal", False):
        keep = torch.ones(L, S, dtype=torch.bool).tril()
    mask = arg(node, 3, "attn_mask", None)
    if mask is not None and gm is not None:
        if not _is_const(mask):
            return keep
        m = _const_value(gm, mask)
        mk = m if m.dtype == torch.bool else torch.isfinite(m) | (m > 0)
        keep = mk if keep is None else keep & mk
    return keep


def _attention(gm: GraphModule, node: Node) -> Node:
    q, k, v = node.args[:3]
    qv = fake_value(q)
    scale = arg(node, 7, "scale", None)
    scale = 1.0 / math.sqrt(int(qv.shape[-1])) if scale is None else float(scale)
    e = _Emitter(gm, node)
    s = e(aten.matmul.default, q, e(aten.transpose.int, k, -2, -1))
    mask = arg(node, 3, "attn_mask", None)
    if mask is not None:
        m = _const_value(gm, mask)
        if m.dtype != torch.bool:
            finite = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
            if bool((finite != 0).any()):
                s = e(aten.add.Tensor, s, e.const(f"{node.name}_mask_bias", (finite / scale).to(torch.float32)))
    keep = _keep(node, gm)
    keep_node = None if keep is None else e.const(f"{node.name}_keep", keep)
    p = e(torch.ops.tabula.softmax.default, s, -1, scale, keep_node)
    return e(aten.matmul.default, p, v)


def _pieces(gm: GraphModule, node: Node) -> None:
    name = canonical_op(node.target)
    x = node.args[0]
    rank = fake_value(x).dim()
    dim = int(arg(node, 1, "dim", 0) if name == "aten.unbind" else arg(node, 2, "dim", 0)) % rank
    sizes = [int(t.shape[dim]) if name != "aten.unbind" else 1 for t in node.meta["val"]]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    for u in list(node.users):
        i = int(u.args[1])
        e = _Emitter(gm, u)
        if name == "aten.unbind":
            piece = e(aten.select.int, x, dim, i)
        else:
            piece = e(aten.slice.Tensor, x, dim, starts[i], starts[i] + sizes[i])
        u.replace_all_uses_with(piece)
        gm.graph.erase_node(u)


def _extrema(gm: GraphModule, node: Node) -> None:
    x = node.args[0]
    dim = int(arg(node, 1, "dim", -1)) % max(fake_value(x).dim(), 1)
    keep = bool(arg(node, 2, "keepdim", False))
    big = canonical_op(node.target) == "aten.max"
    for u in list(node.users):
        e = _Emitter(gm, u)
        if int(u.args[1]) == 0:
            piece = e(aten.amax.default if big else aten.amin.default, x, [dim], keep)
        else:
            piece = e(aten.argmax.default if big else aten.argmin.default, x, dim, keep)
        u.replace_all_uses_with(piece)
        gm.graph.erase_node(u)


def _stack(gm: GraphModule, node: Node) -> Node:
    xs, dim = node.args[0], int(arg(node, 1, "dim", 0))
    rank = fake_value(xs[0]).dim() + 1
    e = _Emitter(gm, node)
    return e(aten.cat.default, [e(aten.unsqueeze.default, x, dim % rank) for x in xs], dim % rank)


def _masked_fill(gm: GraphModule, node: Node) -> Node:
    x, mask, value = node.args[:3]
    e = _Emitter(gm, node)
    if isinstance(value, Node):
        return e(aten.where.self, mask, value, x)
    return e(aten.where.ScalarSelf, mask, value, x)


def _glu(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    rank = fake_value(x).dim()
    dim = int(arg(node, 1, "dim", -1)) % rank
    h = int(fake_value(x).shape[dim]) // 2
    e = _Emitter(gm, node)
    a, b = e(aten.slice.Tensor, x, dim, 0, h), e(aten.slice.Tensor, x, dim, h, 2 * h)
    return e(aten.mul.Tensor, a, e(aten.sigmoid.default, b))


def _shuffle(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    r = int(node.args[1])
    n, c, h, w = (int(d) for d in fake_value(x).shape)
    e = _Emitter(gm, node)
    if canonical_op(node.target) == "aten.pixel_shuffle":
        y = e(aten.view.default, x, [n, c // (r * r), r, r, h, w])
        y = e(aten.permute.default, y, [0, 1, 4, 2, 5, 3])
        return e(aten.reshape.default, y, [n, c // (r * r), h * r, w * r])
    y = e(aten.view.default, x, [n, c, h // r, r, w // r, r])
    y = e(aten.permute.default, y, [0, 1, 3, 5, 2, 4])
    return e(aten.reshape.default, y, [n, c * r * r, h // r, w // r])


def _group_norm(gm: GraphModule, node: Node) -> Node:
    x, groups = node.args[0], int(node.args[1])
    w, b = arg(node, 2, "weight", None), arg(node, 3, "bias", None)
    eps = float(arg(node, 4, "eps", 1e-5))
    n, c, h, wd = (int(d) for d in fake_value(x).shape)
    e = _Emitter(gm, node)
    rows = e(aten.view.default, x, [n, groups, (c // groups) * h * wd])
    y = e(aten.layer_norm.default, rows, [(c // groups) * h * wd], None, None, eps)
    y = e(aten.view.default, y, [n, c, h, wd])
    if w is not None:
        y = e(aten.mul.Tensor, y, e(aten.view.default, w, [1, c, 1, 1]))
    if b is not None:
        y = e(aten.add.Tensor, y, e(aten.view.default, b, [1, c, 1, 1]))
    return y


def _norms(gm: GraphModule, node: Node) -> Node:
    name = canonical_op(node.target)
    e = _Emitter(gm, node)
    x = node.args[0]
    if name == "aten.linalg_vector_norm":
        rank = fake_value(x).dim()
        dims = arg(node, 2, "dim", None)
        dims = [int(dims) % rank] if isinstance(dims, int) else [int(d) % rank for d in dims]
        keep = bool(arg(node, 3, "keepdim", False))
        return e(aten.sqrt.default, e(aten.sum.dim_IntList, e(aten.mul.Tensor, x, x), dims, keep))
    if name == "aten.clamp_min":
        return e(aten.clamp.default, x, node.args[1])
    return e(aten.expand.default, x, list(fake_value(node.args[1]).shape))  # expand_as


def _prelu(gm: GraphModule, node: Node) -> Node:
    x, w = node.args[:2]
    rank = fake_value(x).dim()
    a = _const_value(gm, w).to(torch.float32)
    a = a.reshape(1) if a.numel() == 1 else a.reshape([-1] + [1] * (rank - 2))
    e = _Emitter(gm, node)
    return e(aten.where.self, e(aten.gt.Scalar, x, 0.0), x, e(aten.mul.Tensor, x, e.const(f"{node.name}_weight", a)))


def _safe_softmax(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    return _Emitter(gm, node)(aten.softmax.int, x, int(arg(node, 1, "dim", -1)))


def _from_constants(n) -> bool:
    """``n`` is computed from constants only (no graph input upstream): it folds into a constant."""
    seen, todo = set(), [n]
    while todo:
        m = todo.pop()
        if not isinstance(m, Node) or m in seen:
            continue
        seen.add(m)
        if m.op == "placeholder":
            return False
        todo.extend(m.all_input_nodes)
    return True


def _addmm(gm: GraphModule, node: Node) -> Node:
    b, m1, m2 = node.args[:3]
    beta, alpha = float(node.kwargs.get("beta", 1)), float(node.kwargs.get("alpha", 1))
    e = _Emitter(gm, node)

    def scaled(v, k):
        return v if k == 1.0 else e(aten.mul.Tensor, v, k)

    if beta == 0.0:
        b = None
    if _from_constants(m2):
        bias = scaled(b, beta) if b is not None and fake_value(b).dim() == 1 and _from_constants(b) else None
        y = e(aten.linear.default, m1, scaled(e(aten.t.default, m2), alpha), bias)
        if b is None or bias is not None:
            return y
        return e(aten.add.Tensor, y, scaled(b, beta))
    y = scaled(e(aten.mm.default, m1, m2), alpha)
    return y if b is None else e(aten.add.Tensor, y, scaled(b, beta))


def _triangle(gm: GraphModule, node: Node) -> Node:
    x, k = node.args[0], int(arg(node, 1, "diagonal", 0))
    rows, cols = (int(d) for d in fake_value(x).shape[-2:])
    ones = torch.ones(rows, cols, dtype=torch.bool)
    keep = ones.tril(k) if canonical_op(node.target) == "aten.tril" else ones.triu(k)
    e = _Emitter(gm, node)
    return e(aten.where.ScalarOther, e.const(f"{node.name}_keep", keep), x, 0.0)


def _var_args(node: Node) -> tuple[list[int], float, bool]:
    """``(dims, correction, keepdim)`` of a ``var`` node, any overload (dims every dim when not given)."""
    rank = fake_value(node.args[0]).dim()
    if node.target == aten.var.default:
        return list(range(rank)), 1.0 if arg(node, 1, "unbiased", True) else 0.0, False
    dims = arg(node, 1, "dim", None)
    dims = list(range(rank)) if dims is None else [int(dims) % rank] if isinstance(dims, int) else \
        [int(d) % rank for d in dims]
    if node.target == aten.var.dim:
        corr = 1.0 if arg(node, 2, "unbiased", True) else 0.0
        return dims, corr, bool(arg(node, 3, "keepdim", False))
    corr = node.kwargs.get("correction")
    return dims, 1.0 if corr is None else float(corr), bool(node.kwargs.get("keepdim", False))


def _var(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    dims, corr, keep = _var_args(node)
    n = math.prod(int(fake_value(x).shape[d]) for d in dims)
    e = _Emitter(gm, node)
    d = e(aten.sub.Tensor, x, e(aten.mean.dim, x, dims, True))
    v = e(aten.mean.dim, e(aten.mul.Tensor, d, d), dims, keep)
    return v if corr == 0.0 else e(aten.mul.Tensor, v, n / (n - corr))


def _log_softmax(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    dim = int(arg(node, 1, "dim", -1)) % fake_value(x).dim()
    e = _Emitter(gm, node)
    d = e(aten.sub.Tensor, x, e(aten.amax.default, x, [dim], True))
    ex = e(aten.exp.default, d)
    # exp's output grid from what it produces, (0, 1]: d <= 0, but d's own grid (int16: symmetric) reaches
    # as far above 0, whose exact image would spend most codes on values exp never produces here
    ex.meta["tabula_table_output"] = "observed"
    return e(aten.sub.Tensor, d, e(aten.log.default, e(aten.sum.dim_IntList, ex, [dim], True)))


def log_softmax_error_bound(row_len: int, s_d: float, s_e: float, s_sum: float, s_log: float, s_out: float) -> float:
    """A bound, in output LSB, on ``|y - log_softmax(x)|`` for the decomposition above, against the exact
    log_softmax of the dequantized input codes, from its grids' steps (real units): ``d`` is exact (the
    codes of x minus the codes of its max, one rounding onto d's grid: ``s_d / 2``); ``S = sum(e)`` has
    at most ``row_len * s_e / 2`` from the exps' roundings and ``s_sum / 2`` from its own, so (``S >= 1``)
    ``log S`` errs by at most that sum (log's slope is at most 1 there) plus ``s_log / 2`` (int16's
    table plans: ``s_log`` instead, within 1 LSB); the final SUB rounds once more::

        bound = 1/2 + (s_d / 2 + row_len * s_e / 2 + s_sum / 2 + s_log) / s_out

    A first-order bound (exp's own error at d ~ 0 counted in ``s_e``); measured errors are below it
    (``tests/models/test_long_tail_tables.py``)."""
    return 0.5 + (s_d / 2 + row_len * s_e / 2 + s_sum / 2 + s_log) / s_out


def _clamp_tensor(gm: GraphModule, node: Node) -> Node:
    x = node.args[0]
    e = _Emitter(gm, node)
    bounds = []
    for i, key in ((1, "min"), (2, "max")):
        b = arg(node, i, key, None)
        if _is_const(b):
            v = _const_value(gm, b)
            if v.numel() == 1 or bool((v == v.reshape(-1)[0]).all()):
                b = float(v.reshape(-1)[0])
        bounds.append(b)
    lo, hi = bounds  # PyTorch's order: min(max(x, lo), hi)
    if not isinstance(lo, Node) and not isinstance(hi, Node):
        x = e(aten.clamp.default, x, lo, hi)
        lo = hi = None
    if lo is not None:
        x = e(aten.maximum.default, x, lo) if isinstance(lo, Node) else e(aten.clamp.default, x, lo)
    if hi is not None:
        x = e(aten.minimum.default, x, hi) if isinstance(hi, Node) else e(aten.clamp.default, x, None, hi)
    shape = list(node.meta["val"].shape)  # a one-valued bound of more dims than x broadcasts x
    return x if list(fake_value(x).shape) == shape else e(aten.expand.default, x, shape)


def _constant_pad(gm: GraphModule, node: Node) -> Node:
    x, pad = node.args[:2]
    return _Emitter(gm, node)(aten.pad.default, x, list(pad), "constant", float(arg(node, 2, "value", 0.0)))


def _copy(gm: GraphModule, node: Node) -> Node:
    dst, src = node.args[:2]
    shape = list(fake_value(dst).shape)
    if list(fake_value(src).shape) == shape:
        return src
    return _Emitter(gm, node)(aten.expand.default, src, shape)


def _max_pool_values(gm: GraphModule, node: Node) -> None:
    for u in list(node.users):
        if int(u.args[1]) == 0:
            u.replace_all_uses_with(_Emitter(gm, u)(aten.max_pool2d.default, *node.args, **node.kwargs))
        gm.graph.erase_node(u)


def _einsum(gm: GraphModule, node: Node) -> Node:
    ins, out = _einsum_terms(node)
    ops = list(node.args[1])
    e = _Emitter(gm, node)
    size = {c: int(n) for t, o in zip(ins, ops) for c, n in zip(t, fake_value(o).shape)}

    def permute(x, have: str, want: str):
        perm = [have.index(c) for c in want]
        return x if perm == list(range(len(perm))) else e(aten.permute.default, x, perm)

    def reshape(x, shape: list[int]):
        return x if list(fake_value(x).shape) == shape else e(aten.reshape.default, x, shape)

    def sum_out(x, have: str, keep: str) -> tuple[Node, str]:
        """``x`` summed over the indices of ``have`` that are not in ``keep``."""
        dims = [i for i, c in enumerate(have) if c not in keep]
        if not dims:
            return x, have
        return e(aten.sum.dim_IntList, x, dims), "".join(c for c in have if c in keep)

    if len(ops) == 1:
        x, have = sum_out(ops[0], ins[0], out)
        return permute(x, have, out)
    (a, b), (ta, tb) = ops, ins
    a, ta = sum_out(a, ta, tb + out)
    b, tb = sum_out(b, tb, ta + out)
    batch = "".join(c for c in out if c in ta and c in tb)
    contract = "".join(c for c in ta if c in tb and c not in out)
    left = "".join(c for c in ta if c not in tb)
    right = "".join(c for c in tb if c not in ta)
    n = lambda idx: math.prod(size[c] for c in idx)  # noqa: E731
    a3 = reshape(permute(a, ta, batch + left + contract), [n(batch), n(left), n(contract)])
    b3 = reshape(permute(b, tb, batch + contract + right), [n(batch), n(contract), n(right)])
    y = reshape(e(aten.bmm.default, a3, b3), [size[c] for c in batch + left + right])
    return permute(y, batch + left + right, out)


def _cosine_similarity(gm: GraphModule, node: Node) -> Node:
    a, b = node.args[:2]
    shape = list(torch.broadcast_shapes(fake_value(a).shape, fake_value(b).shape))
    dim = int(arg(node, 2, "dim", 1)) % len(shape)
    eps = float(arg(node, 3, "eps", 1e-8))
    e = _Emitter(gm, node)

    def unit(x):
        if list(fake_value(x).shape) != shape:
            x = e(aten.expand.default, x, shape)
        r = e(aten.rsqrt.default, e(aten.clamp.default, e(aten.sum.dim_IntList, e(aten.mul.Tensor, x, x), [dim], True),
                                    eps * eps))
        # rsqrt's output grid from what it produces: its input grid reaches 0, the pole, whose exact image is unbounded
        r.meta["tabula_table_output"] = "observed"
        return e(aten.mul.Tensor, x, r)

    return e(aten.sum.dim_IntList, e(aten.mul.Tensor, unit(a), unit(b)), [dim])


def cosine_similarity_error_bound(n: int, s_u: float, s_p: float, s_out: float) -> float:
    """A first-order bound, in output LSB, on ``|y - cosine_similarity(a, b)|`` for the decomposition above against
    the exact value on the dequantized inputs, from the grids' steps (real units): ``s_u`` the coarser of the two unit
    vectors' grids (``nx = x * rsqrt(|x|^2)``, entries in [-1, 1]), ``s_p`` the grid of their product, ``s_out`` the
    output's, ``n`` the length of the reduced dim.  A unit vector's entry errs by at most its own rounding
    ``s_u / 2`` plus what the squared norm's and rsqrt's roundings carry into it, counted here as one more
    ``s_u / 2`` (the measured part, ``tests/models/test_long_tail_decomposed.py``); a product ``u v`` of entries
    ``|u|, |v| <= 1`` errs by ``|u| e_v + |v| e_u`` plus its own ``s_p / 2``, summed over the ``n`` entries with
    ``sum |u_i| <= sqrt(n)`` (Cauchy-Schwarz), and the sum's RESCALE rounds once more::

        bound = 1/2 + (2 sqrt(n) s_u + n s_p / 2) / s_out
    """
    return 0.5 + (2 * math.sqrt(n) * s_u + n * s_p / 2) / s_out


def _pow_tensor(gm: GraphModule, node: Node) -> Node:
    a, b = node.args[:2]
    e = _Emitter(gm, node)
    if _is_const(b):
        v = _const_value(gm, b)
        if v.numel() == 1 or bool((v == v.reshape(-1)[0]).all()):
            return e(aten.pow.Tensor_Scalar, a, float(v.reshape(-1)[0]))
    log = e(aten.log.default, a)
    log.meta["tabula_table_output"] = "observed"
    y = e(aten.exp.default, e(aten.mul.Tensor, b, log))
    y.meta["tabula_table_output"] = "observed"
    return y


def pow_error_bound(y_max: float, b_max: float, s_log: float, s_m: float, s_out: float) -> float:
    """A first-order bound, in output LSB, on ``|y - a ** b|`` for ``exp(b * log(a))`` against the exact power of the
    dequantized inputs, from the grids' steps (real units): ``s_log`` the log TABLE's output grid (one rounding,
    ``s_log / 2``; int16 table plans within ``s_log``), ``s_m`` the MUL's (``s_m / 2``), ``s_out`` the exp TABLE's.
    The MUL's input ``log a`` errs by ``s_log``, times ``|b| <= b_max``; exp carries an input error ``d`` as
    ``y (e^d - 1) ~ y d`` with ``y <= y_max`` the largest output::

        bound = 1 + y_max (b_max s_log + s_m / 2) / s_out

    (1: exp's own rounding, int16 within 1 LSB.)  Measured in ``tests/models/test_long_tail_decomposed.py``."""
    return 1.0 + y_max * (b_max * s_log + s_m / 2) / s_out


def _like(gm: GraphModule, node: Node) -> Node:
    v = node.meta["val"]
    name = canonical_op(node.target)
    fill = 0.0 if name == "aten.zeros_like" else 1.0 if name == "aten.ones_like" else float(node.args[1])
    return _new_const(gm, f"{node.name}_value", torch.full(tuple(v.shape), fill, dtype=v.dtype), node, node)


def decompose_ops(gm: GraphModule) -> int:
    """Rewrite every :data:`DECOMPOSED` node of ``gm`` in place (module doc) that :func:`unsupported`
    accepts; returns how many were rewritten."""
    count = 0
    masks = set()
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        name = canonical_op(node.target)
        if name not in DECOMPOSED or not _rewrites(node) or unsupported(node):
            continue
        if name == "aten.scaled_dot_product_attention" and _is_const(arg(node, 3, "attn_mask", None)):
            masks.add(str(arg(node, 3, "attn_mask", None).target))
        if name in _SPLITS:
            _pieces(gm, node)
        elif name in _EXTREMA:
            _extrema(gm, node)
        elif name == "aten.max_pool2d_with_indices":
            _max_pool_values(gm, node)
        else:
            fn = {"aten.scaled_dot_product_attention": _attention, "aten.stack": _stack,
                  "aten.masked_fill": _masked_fill, "aten.glu": _glu, "aten.pixel_shuffle": _shuffle,
                  "aten.pixel_unshuffle": _shuffle, "aten.log_softmax": _log_softmax,
                  "aten._log_softmax": _log_softmax, "aten.group_norm": _group_norm,
                  **{k: _norms for k in _NORMS[1:]}, "aten.prelu": _prelu, "aten._safe_softmax": _safe_softmax,
                  "aten.addmm": _addmm, "aten.tril": _triangle, "aten.triu": _triangle,
                  "aten.var": _var, "aten.clamp": _clamp_tensor, "aten.constant_pad_nd": _constant_pad,
                  "aten.copy": _copy, "aten.einsum": _einsum, "aten.cosine_similarity": _cosine_similarity,
                  "aten.pow": _pow_tensor}.get(name, _like)
            node.replace_all_uses_with(fn(gm, node))
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.graph.eliminate_dead_code()
        _drop_unread(gm, masks)
        gm.graph.lint()
        gm.recompile()
    return count


def _drop_unread(gm: GraphModule, targets: set[str]) -> None:
    """Delete the attention masks no node reads any more (their ``-inf`` entries live on as the keep mask;
    the weight checks would refuse them)."""
    read = {str(n.target) for n in gm.graph.nodes if n.op == "get_attr"}
    for t in targets - read:
        *path, leaf = t.split(".")
        mod = gm
        for part in path:
            mod = getattr(mod, part)
        if leaf in mod._buffers:
            del mod._buffers[leaf]
        elif leaf in mod._parameters:
            del mod._parameters[leaf]
