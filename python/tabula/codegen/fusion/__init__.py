"""Codegen-only fusion: the IR stays TOSA (the reference, the TOSA serializer and the reports see every
op); the C runner may compute a group of IR ops with one kernel when that is bit-exact.

One pass per file, ``<verb>_<object>_pass.py`` in this folder, each a function of the same name
``Graph -> Graph`` that returns a copy (``g`` is never modified) and a ``MUST_RUN_BEFORE`` table: the passes
that must come after it, each with the reason.  :data:`ORDER` lists the passes once, in the order
:func:`fuse_all` (and so :func:`tabula.codegen.generate`) applies them; :func:`check_order` proves that the
folder and the list agree and that every declared constraint holds (it runs once, at import).
Three constraints are declared: ``fuse_requant`` before ``fold_input_zp`` (the folded bias is named after
the op's output, so the other order renames constants in ``model.c``), and ``fuse_requant`` and
``fuse_add_requant`` before ``fuse_rescale_clamp`` (which would otherwise take the CLAMP of a RESCALE they
fuse: they leave a RESCALE with clamp bounds alone, so the int32 / int48 tensor would stay).  Otherwise every pair of passes
commutes on the model zoo (a conv stack with int16 ramps, a table and a softmax; the op-class zoo; int8
and a16w8): TABLE16 and SOFTMAX compute from their group's own metadata and the others match disjoint
patterns.  ``tests/codegen/test_fuse.py`` runs every pair in both orders and requires any pair whose order
changes the result to be declared in ``MUST_RUN_BEFORE``.

The passes (see each module):

* ``fuse_table16``  an int16 table op's TOSA sequence -> ``TABLE16`` (``tabula_table16_s16``);
* ``fuse_softmax``  a softmax's sequence -> ``SOFTMAX`` (``tabula_softmax_<t>``);
* ``fuse_pad``      a zero-point PAD into the CONV2D / DEPTHWISE_CONV2D that reads it;
* ``fuse_requant``  RESCALE [+ CLAMP] into the CONV2D / DEPTHWISE_CONV2D / FULLY_CONNECTED epilogue;
* ``fuse_add_requant``  RESCALE, RESCALE, ADD / SUB, RESCALE [+ CLAMP] -> ``ADD_REQUANT``;
* ``fold_input_zp`` the input zero point of an int8 CONV2D / FULLY_CONNECTED folded into its bias;
* ``fuse_rescale_clamp``  a RESCALE int32 / int48 -> int8 / int16 left alone (a precision boundary) and its
  CLAMP -> one RESCALE with ``attrs["clamp"]`` (``tabula_rescale_clamp_<in>_<out>``).
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Callable

from ...ir import Graph
from .fold_input_zp_pass import fold_input_zp, folded_bias
from .fuse_add_requant_pass import FUSED_ADD_REQUANT, fuse_add_requant
from .fuse_pad_pass import fuse_pad
from .fuse_requant_pass import fuse_requant
from .fuse_rescale_clamp_pass import fuse_rescale_clamp
from .fuse_softmax_pass import FUSED_SOFTMAX, fuse_softmax
from .fuse_table16_pass import FUSED_TABLE16, fuse_table16

__all__ = ["ORDER", "passes", "check_order", "fuse_all", "fuse_table16", "fuse_softmax", "fuse_pad", "fuse_requant",
           "fuse_add_requant", "fold_input_zp", "fuse_rescale_clamp", "folded_bias", "FUSED_TABLE16", "FUSED_SOFTMAX", "FUSED_ADD_REQUANT"]

#: Every fusion pass, once, in the order :func:`fuse_all` applies them.
ORDER: tuple[str, ...] = ("fuse_table16", "fuse_softmax", "fuse_pad", "fuse_requant", "fuse_add_requant", "fold_input_zp",
                          "fuse_rescale_clamp")

_SUFFIX = "_pass"


def passes() -> dict[str, ModuleType]:
    """Pass name -> its module, found by listing this folder (``<name>_pass.py``)."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.endswith(_SUFFIX):
            found[info.name[: -len(_SUFFIX)]] = importlib.import_module(f"{__name__}.{info.name}")
    return found


def check_order(order: tuple[str, ...] = ORDER, modules: dict[str, ModuleType] | None = None) -> None:
    """Raise ValueError unless ``order`` names every pass of ``modules`` (default: this folder's) exactly
    once, each module defines its function and ``MUST_RUN_BEFORE``, and every pass comes before each pass
    its ``MUST_RUN_BEFORE`` names.  The message names the pass and the reason it declared."""
    modules = passes() if modules is None else modules
    if sorted(order) != sorted(modules) or len(set(order)) != len(order):
        raise ValueError(f"fusion ORDER {list(order)} must list every pass of the folder once: {sorted(modules)}")
    at = {name: i for i, name in enumerate(order)}
    for name, mod in modules.items():
        if not callable(getattr(mod, name, None)) or not isinstance(getattr(mod, "MUST_RUN_BEFORE", None), dict):
            raise ValueError(f"fusion pass {mod.__name__} must define {name}(g) and MUST_RUN_BEFORE")
        for later, why in mod.MUST_RUN_BEFORE.items():
            if later not in at:
                raise ValueError(f"fusion pass {name} must run before {later}, which is no pass of the folder")
            if at[later] < at[name]:
                raise ValueError(f"fusion ORDER runs {later} before {name}, but {name} must run first: {why}")


def _functions() -> list[Callable[[Graph], Graph]]:
    modules = passes()
    return [getattr(modules[name], name) for name in ORDER]


check_order()
_PASSES = _functions()


def fuse_all(g: Graph) -> Graph:
    """Every codegen fusion, in :data:`ORDER` (the order :func:`tabula.codegen.generate` applies them).
    ``g`` is not modified."""
    for run in _PASSES:
        g = run(g)
    return g
