"""Run an integer IR :class:`~tabula.lower.ir.Graph` with the numpy reference ops: the golden model.

Op functions are discovered by listing ``tabula/reference/ops/``: every module there with a
module-level ``OP`` (the TOSA name) and ``run(inputs, attrs)`` implements that IR op.  No
hand-kept list.  The caller verifies the graph (:func:`tabula.lower.ir.verify`) first.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

import numpy as np

from tabula.lower.ir import Graph, Op

from . import ops as _ops_pkg

__all__ = ["InterpreterError", "op_functions", "run_graph"]

OpFn = Callable[[list[np.ndarray], dict], np.ndarray]
_OP_FUNCTIONS: dict[str, OpFn] | None = None


class InterpreterError(RuntimeError):
    """A graph the reference cannot run: a missing op, a bad input, or an op whose result breaks
    the IR tensor it should produce.  The message names the op and its ``source`` node."""


def op_functions() -> dict[str, OpFn]:
    """Map TOSA op name -> reference ``run`` function, found by listing ``reference/ops/``."""
    global _OP_FUNCTIONS
    if _OP_FUNCTIONS is None:
        found: dict[str, OpFn] = {}
        for info in pkgutil.iter_modules(_ops_pkg.__path__):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{_ops_pkg.__name__}.{info.name}")
            name = getattr(mod, "OP", None)
            if name is None:
                continue
            if name in found:
                raise InterpreterError(f"two reference modules implement {name}: see {mod.__name__}")
            found[name] = mod.run
        _OP_FUNCTIONS = found
    return _OP_FUNCTIONS


def _where(op: Op) -> str:
    return f"{op.op} ({op.source or 'no source'})"


def run_graph(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``graph`` on ``inputs`` (one array per ``graph.inputs``, IR shape and dtype, NHWC) and
    return the graph outputs.  Each op gets its IR ``attrs`` plus ``output_dtype`` (its output
    tensor's dtype).  Raises :class:`InterpreterError` on a wrong input, an op without a reference,
    an op that fails, or a result whose shape/dtype differs from its IR tensor."""
    fns = op_functions()
    if len(inputs) != len(graph.inputs):
        raise InterpreterError(f"graph has {len(graph.inputs)} inputs {graph.inputs}, got {len(inputs)} arrays")
    env: dict[str, np.ndarray] = dict(graph.constants)
    for name, arr in zip(graph.inputs, inputs):
        t = graph.tensors[name]
        arr = np.asarray(arr)
        if tuple(arr.shape) != tuple(t.shape) or arr.dtype != np.dtype(t.dtype):
            raise InterpreterError(
                f"graph input {name!r}: expected {t.dtype} {tuple(t.shape)}, got {arr.dtype} {tuple(arr.shape)}"
            )
        env[name] = arr
    for op in graph.ops:
        fn = fns.get(op.op)
        if fn is None:
            raise InterpreterError(f"{_where(op)}: no reference op; reference/ops/ has {', '.join(sorted(fns))}")
        out_t = graph.tensors[op.outputs[0]]
        try:
            args = [env[n] for n in op.inputs]
        except KeyError as e:
            raise InterpreterError(f"{_where(op)}: input {e.args[0]!r} has no value (not an input, constant or earlier output)") from None
        try:
            result = fn(args, {**op.attrs, "output_dtype": out_t.dtype})
        except Exception as e:  # name the failing node, keep the cause
            raise InterpreterError(f"{_where(op)}: {type(e).__name__}: {e}") from e
        result = np.asarray(result)
        if tuple(result.shape) != tuple(out_t.shape) or result.dtype != np.dtype(out_t.dtype):
            raise InterpreterError(
                f"{_where(op)}: result {result.dtype} {tuple(result.shape)} does not match output tensor "
                f"{out_t.name!r} {out_t.dtype} {tuple(out_t.shape)}"
            )
        env[op.outputs[0]] = result
    return [env[n] for n in graph.outputs]
