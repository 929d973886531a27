"""TABLE: the spec of ``tabula_table_s8`` and ``tabula_table_s16``.

Semantics: TOSA 1.0 TABLE (checked bit for bit against the TOSA reference model in
tests/tosa/test_tosa_conformance.py).  inputs: ``x`` and the constant ``table``; attrs only describe where
the table came from (``function``, ``args``, ``domain``; int16 multi-table plans add ``terms``).

* int8: ``x`` int8 [...], ``table`` int8 [256] -> int8 [...]:  ``out = table[x + 128]``.
* int16: ``x`` int16 [...], ``table`` int16 [513] -> int32 [...] (``apply_lookup_s``):
  ``index = (x + 32768) >> 7``, ``frac = x & 0x7F``, ``slope = table[index + 1] - table[index]``,
  ``out = (table[index] << 7) + slope * frac``  (a 16.7 value; exact, no rounding).
  TOSA REQUIREs every slope to fit int16; a table with a slope outside [-32768, 32767] is rejected
  here (the C kernel returns TABULA_ERR_ARG when an element meets one).
"""
from __future__ import annotations

import numpy as np
from tabula.qmath import table_interpolate_int16

from .._checks import TType, check_arrays, n_inputs, need, no_macs

OP = "TABLE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 2)
    x, table = ins
    if x.dtype == "int8":
        need(table.dtype == "int8" and table.shape == (256,), OP, "int8 TABLE needs a 256-entry int8 table")
        return TType(x.shape, "int8")
    need(x.dtype == "int16", OP, f"input dtype {x.dtype} not int8/int16")
    need(table.dtype == "int16" and table.shape == (513,), OP, "int16 TABLE needs a 513-entry int16 table")
    return TType(x.shape, "int32")


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    check_arrays(contract, inputs, attrs)
    x, table = inputs
    if x.dtype == np.int8:
        return table[x.astype(np.int32) + 128]
    slopes = np.diff(table.astype(np.int32))
    bad = np.flatnonzero((slopes < -32768) | (slopes > 32767))
    if bad.size:
        i = int(bad[0])
        need(False, OP, f"int16 TABLE slope table[{i + 1}] - table[{i}] = {int(slopes[i])} is outside int16 "
             "(TOSA REQUIREs it)")
    return table_interpolate_int16(table, x)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op) -> None:
    """TOSA 1.0 TABLE: inputs ``x`` and ``table`` (CONST); int8 -> int8, int16 -> int32."""
    t.emit("TABLE", [t.input(op, 0), t.input(op, 1)], [t.output(op)], t.attr("Table"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 TABLE: ``x`` and ``table`` (int8 [256] -> int8, int16 [513] -> int32)."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)])
