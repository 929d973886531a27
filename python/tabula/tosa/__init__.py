"""The IR as a TOSA 1.0.0 flatbuffer, run by the official TOSA reference model (``tosa-tools`` on PyPI).

:func:`serialize` writes a whole IR graph with tosa-tools' serializer: every IR op's mapping lives in
its spec module (``spec.tosa``, :mod:`tabula.reference.ops`), emitted through a :class:`TosaWriter`;
:func:`run` executes a flatbuffer with ``tosa_reference_model``; :func:`run_graph` does both for an IR
graph; :func:`read` is the inverse of :func:`serialize` (:mod:`tabula.tosa.reader`: each spec's
``from_tosa``), raising :class:`Unsupported` for what tabula does not implement.  :mod:`tabula.tosa.sut`
(imported by TOSA's ``tosa_verif_run_tests --sut-module tabula.tosa.sut``, not here) runs TOSA's
conformance tests through tabula's C kernels, one call per IR op (:mod:`tabula.tosa.kernel_calls`).
``tosa-tools`` is optional (a test extra): :func:`unavailable` says why it cannot be used.
``tabula tosa --ir <build dir> --out model.tosa`` writes the file, and every SCons build writes
``model.tosa`` beside ``ir.json`` where tosa-tools imports.
"""
from __future__ import annotations

from .flatbuffer import TOSA_VERSION, TosaError, TosaWriter, describe, run, run_graph, serialize, supported_ops, unavailable
from .reader import TosaOperator, TosaReader, Unsupported, read, read_file, supported_tosa_ops

__all__ = ["TOSA_VERSION", "TosaError", "TosaOperator", "TosaReader", "TosaWriter", "Unsupported", "describe", "read",
           "read_file", "run", "run_graph", "serialize", "supported_ops", "supported_tosa_ops", "unavailable"]
