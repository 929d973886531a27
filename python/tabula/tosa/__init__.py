"""The IR as a TOSA flatbuffer, run by the official TOSA reference model (``tosa-tools`` on PyPI).

:func:`serialize` writes the ops TOSA and tabula share one-to-one (TABLE, RESCALE, ADD, SUB, MUL,
DEPTHWISE_CONV2D) with tosa-tools' serializer; :func:`run` executes a flatbuffer with ``tosa_reference_model``; :func:`run_graph` does
both for an IR graph.  ``tosa-tools`` is optional: :func:`unavailable` says why it cannot be used.
"""
from __future__ import annotations

from .flatbuffer import SUPPORTED_OPS, TosaError, run, run_graph, serialize, unavailable

__all__ = ["SUPPORTED_OPS", "TosaError", "run", "run_graph", "serialize", "unavailable"]
