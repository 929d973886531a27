"""The IR as a TOSA 1.0.0 flatbuffer, run by the official TOSA reference model (``tosa-tools`` on PyPI).

:func:`serialize` writes a whole IR graph with tosa-tools' serializer: every IR op's mapping lives in
its spec module (``spec.tosa``, :mod:`tabula.reference.ops`), emitted through a :class:`TosaWriter`;
:func:`run` executes a flatbuffer with ``tosa_reference_model``; :func:`run_graph` does both for an IR
graph.  ``tosa-tools`` is optional (a test extra): :func:`unavailable` says why it cannot be used.
``tabula tosa --ir <build dir> --out model.tosa`` writes the file, and every SCons build writes
``model.tosa`` beside ``ir.json`` where tosa-tools imports.
"""
from __future__ import annotations

from .flatbuffer import TOSA_VERSION, TosaError, TosaWriter, describe, run, run_graph, serialize, supported_ops, unavailable

__all__ = ["TOSA_VERSION", "TosaError", "TosaWriter", "describe", "run", "run_graph", "serialize", "supported_ops", "unavailable"]
