"""Helpers over ``torch.fx`` graphs shared by the quantizer and the lowering (torch only: no torchao,
so the lowering never imports it).

PT2E's quantize/dequantize nodes are recognised by their op name
(``quantized_decomposed.quantize_per_tensor`` ...), which needs no registration of those ops.
"""
from __future__ import annotations

import re

import torch
from torch.fx import Node

__all__ = ["canonical_op", "replace_with_call", "node_source", "arg", "is_quantize", "is_dequantize", "is_dequantize_per_channel",
           "is_qdq", "fake_value"]

Q = "quantized_decomposed.quantize_per_tensor"
DQ = "quantized_decomposed.dequantize_per_tensor"
DQ_CHANNEL = "quantized_decomposed.dequantize_per_channel"


def canonical_op(target: object) -> str:
    """Name of the functional aten op for a node target: ``aten.silu_.default`` -> ``"aten.silu"``.

    In-place overloads (a trailing ``_`` on an aten op that has a functional twin) map to the twin.
    Non-aten targets (e.g. ``operator.getitem``) return their qualified name.
    """
    if isinstance(target, torch._ops.OpOverload):
        name = target.overloadpacket._qualified_op_name.replace("::", ".")
    elif isinstance(target, torch._ops.OpOverloadPacket):
        name = target._qualified_op_name.replace("::", ".")
    else:
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', repr(target))}"
    if name.endswith("_") and not name.endswith("__"):
        twin = name[:-1]
        ns, op = twin.split(".", 1)
        if hasattr(getattr(torch.ops, ns), op):
            return twin
    return name


def _is(node, name: str) -> bool:
    t = getattr(node, "target", None)
    return (isinstance(node, Node) and isinstance(t, torch._ops.OpOverload) and t._overloadname == "default"
            and canonical_op(t) == name)


def is_quantize(node) -> bool:
    """``node`` is PT2E's ``quantize_per_tensor.default``."""
    return _is(node, Q)


def is_dequantize(node) -> bool:
    """``node`` is PT2E's ``dequantize_per_tensor.default``."""
    return _is(node, DQ)


def is_dequantize_per_channel(node) -> bool:
    """``node`` is PT2E's ``dequantize_per_channel.default`` (a folded per-channel weight)."""
    return _is(node, DQ_CHANNEL)


def is_qdq(node) -> bool:
    """Any of the three q/dq nodes above."""
    return is_quantize(node) or is_dequantize(node) or is_dequantize_per_channel(node)


def _library_dirs() -> tuple[str, ...]:
    """Folders whose frames are never the user's model code: torch, torchao (located without
    importing it) and the Python standard library."""
    import importlib.util
    import os
    import sysconfig

    dirs = [os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"]]
    spec = importlib.util.find_spec("torchao")
    if spec is not None and spec.origin:
        dirs.append(os.path.dirname(spec.origin))
    return tuple(os.path.join(d, "") for d in dirs)


_LIBRARY_DIRS: tuple[str, ...] | None = None
#: torch / torchao installed somewhere else than the running ones (e.g. a trace recorded elsewhere)
_OTHER_TORCH = re.compile(r"[/\\](site|dist)-packages[/\\]torch(ao)?[/\\]")


def _module_path(node: Node) -> str | None:
    """``features.3 (Conv2d)``: the innermost module of the node's ``nn_module_stack``."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return None
    path, typ = list(stack.values())[-1]
    typ = typ if isinstance(typ, str) else getattr(typ, "__qualname__", str(typ))
    typ = typ.rsplit(".", 1)[-1]
    return f"{path} ({typ})" if path else typ


def node_source(node: Node) -> str:
    """Where the user wrote the op: ``file.py:line node <name>``, from the innermost frame of the
    export stack trace outside torch, torchao and the standard library (the user's model code).
    A model without such a frame (an ``nn.Sequential`` of torch modules) is named by the module
    path of the node's ``nn_module_stack``: ``features.3 (Conv2d) node <name>`` -- never torch's own
    file and line.  Only the file's base name is kept so generated sources are reproducible across
    checkouts."""
    global _LIBRARY_DIRS
    if _LIBRARY_DIRS is None:
        _LIBRARY_DIRS = _library_dirs()
    trace = node.meta.get("stack_trace") or ""
    user = []
    for ln in trace.splitlines():
        ln = ln.strip()
        if ln.startswith('File "') and ", line " in ln:
            fname = ln.split('"')[1]
            lineno = ln.split(", line ")[1].split(",")[0]
            if not fname.startswith(_LIBRARY_DIRS) and not _OTHER_TORCH.search(fname):
                user.append((fname, lineno))
    if user:
        fname, lineno = user[-1]
        return f"{fname.rsplit('/', 1)[-1]}:{lineno} node {node.name}"
    module = _module_path(node)
    return f"{module} node {node.name}" if module else f"node {node.name}"


def arg(node: Node, index: int, name: str, default):
    """Positional-or-keyword argument ``name`` (position ``index``) of an FX node, else ``default``."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def fake_value(node):
    """The FakeTensor of ``node`` or, through q/dq nodes (which carry none), of the value they wrap."""
    while isinstance(node, Node):
        if "val" in node.meta:
            return node.meta["val"]
        if not (is_quantize(node) or is_dequantize(node)):
            return None
        node = node.args[0]
    return None


def replace_with_call(graph, n: Node, target, args: tuple) -> Node:
    """Put ``target(*args)`` (a ``call_function`` node) in ``n``'s place in ``graph``: inserted before ``n``, with
    ``n``'s meta (its source line, stack trace and value), read by every user of ``n``; ``n`` is erased (the caller
    erases what fed only ``n``).  Returns the new node."""
    with graph.inserting_before(n):
        new = graph.call_function(target, args)
    new.meta.update(n.meta)
    n.replace_all_uses_with(new)
    graph.erase_node(n)
    return new
