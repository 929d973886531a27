"""Run an integer IR :class:`~tabula.ir.Graph` with the numpy reference ops: the golden model.

Op functions are the ``run`` of each op spec in ``tabula/reference/ops/`` (found by listing that
folder: :func:`tabula.reference.ops.specs`).  No hand-kept list.  The caller verifies the graph
(:func:`tabula.ir.verify`) first.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from tabula.errors import InterpreterError
from tabula.ir import Graph, Op

from .ops import specs

__all__ = ["InterpreterError", "op_functions", "run_graph"]

OpFn = Callable[[list[np.ndarray], dict], np.ndarray]


def op_functions() -> dict[str, OpFn]:
    """Map TOSA op name -> reference ``run`` function (one per spec in ``reference/ops/``)."""
    return {name: mod.run for name, mod in specs().items()}


def _where(op: Op) -> str:
    return f"{op.op} ({op.source or 'no source'})"


def run_graph(graph: Graph, inputs: list[np.ndarray], trace: dict | None = None) -> list[np.ndarray]:
    """Run ``graph`` on ``inputs`` (one array per ``graph.inputs``, IR shape and dtype, NHWC) and
    return the graph outputs.  Each op gets its IR ``attrs`` plus ``output_dtype`` (its output
    tensor's dtype).  ``trace``, when given, receives every activation (graph inputs and every op's
    output, by tensor name; constants not).  Raises :class:`InterpreterError` on a wrong input, an op without a reference,
    an op that fails, or a result whose shape/dtype differs from its IR tensor."""
    fns = op_functions()
    if len(inputs) != len(graph.inputs):
        raise InterpreterError(f"graph has {len(graph.inputs)} inputs {graph.inputs}, got {len(inputs)} arrays")
    env: dict[str, np.ndarray] = dict(graph.constants)
    for name, arr in zip(graph.inputs, inputs):
        t = graph.tensors[name]
        arr = np.asarray(arr)
        if tuple(arr.shape) != tuple(t.shape) or arr.dtype != t.np_dtype:
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
        if tuple(result.shape) != tuple(out_t.shape) or result.dtype != out_t.np_dtype:
            raise InterpreterError(
                f"{_where(op)}: result {result.dtype} {tuple(result.shape)} does not match output tensor "
                f"{out_t.name!r} {out_t.dtype} {tuple(out_t.shape)}"
            )
        env[op.outputs[0]] = result
    if trace is not None:
        trace.update({k: v for k, v in env.items() if k not in graph.constants})
    return [env[n] for n in graph.outputs]
