"""One module per IR op: the op's *spec*.  Each module defines

- ``OP``: the TOSA op name;
- ``contract(ins, attrs) -> TType``: the op's contract on its input types (:class:`TType`: shape and IR
  dtype) and attributes -- dtypes, shapes, attribute ranges, TOSA 1.0's REQUIREs that do not depend on
  values -- returning the output's type (``attrs["output_dtype"]`` is given where the output dtype is
  free, e.g. RESCALE).  Raises ValueError ``"<OP>: <what>"``;
- ``run(inputs, attrs) -> ndarray``: the integer reference (numpy, bit-exact with the C kernel), which
  checks the contract first and raises ValueError for values the IR forbids (e.g. accumulator overflow).

:func:`tabula.ir.verify` and the interpreter find the ops by listing this folder (:func:`specs`).
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
