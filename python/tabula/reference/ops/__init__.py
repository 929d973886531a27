"""One module per IR op: the op's *spec*.  Each module defines

- ``OP``: the TOSA op name;
- ``contract(ins, attrs) -> TType``: the op's contract on its input types (:class:`TType`: shape and IR
  dtype) and attributes -- dtypes, shapes, attribute ranges, TOSA 1.0's REQUIREs that do not depend on
  values -- returning the output's type (``attrs["output_dtype"]`` is given where the output dtype is
  free, e.g. RESCALE).  Raises ValueError ``"<OP>: <what>"``;
- ``run(inputs, attrs) -> ndarray``: the integer reference (numpy, bit-exact with the C kernel), which
  checks the contract first and raises ValueError for values the IR forbids (e.g. accumulator overflow);
- ``macs(ins, out, attrs) -> int``: its multiply-accumulates (``_checks.no_macs``, 0, for an op without a
  weighted sum), which ``profile=1`` divides the instructions by (:mod:`tabula.codegen.profile`);
- ``bound(ins, attrs, values) -> AccBound``: the largest ``|accumulator|`` any input codes can give
  (per output channel, or for the whole op) and the accumulator dtype it must fit, with ``values``
  the constant inputs (None for the others) -- or ``bound = None`` for an op without an accumulator.
  :mod:`tabula.lowering.bound_accumulators_pass` proves (or makes) every bound fit; the weighted ops
  also give ``channel_rows(w)``, their weights per output channel, for the channel it rescales;
- ``tosa(t, op)``: its TOSA 1.0 mapping, the TOSA op(s) it emits through the
  :class:`tabula.tosa.TosaWriter` ``t`` (:func:`tabula.tosa.serialize`, the whole-graph export);
- ``from_tosa(r, top)``: the inverse, reading the TOSA operator ``top`` named ``OP`` (a
  :class:`tabula.tosa.TosaOperator`) into the IR through the :class:`tabula.tosa.TosaReader` ``r``
  (:func:`tabula.tosa.read`), raising ``r.unsupported(...)`` for an attribute value tabula does not
  implement; an op that is no TOSA operator (FULLY_CONNECTED) declares ``from_tosa = None`` and a
  ``fold_tosa(g)`` that turns the operators its ``tosa`` wrote, as the reader read them, back into the op.

:func:`tabula.ir.verify`, the interpreter, the profile, the bound pass, the TOSA export
and the TOSA reader find the ops by listing this folder (:func:`specs`); ``tests/test_architecture.py``
requires every fact of every op.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from .._checks import TType

__all__ = ["TType", "specs"]

_SPECS: dict[str, ModuleType] | None = None


def specs() -> dict[str, ModuleType]:
    """TOSA op name -> its spec module, found by listing this folder (cached)."""
    global _SPECS
    if _SPECS is None:
        found: dict[str, ModuleType] = {}
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{__name__}.{info.name}")
            if mod.OP in found:
                raise RuntimeError(f"two spec modules define {mod.OP}: {found[mod.OP].__name__}, {mod.__name__}")
            found[mod.OP] = mod
        _SPECS = found
    return _SPECS
