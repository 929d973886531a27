"""TABLE: the executable spec of ``tabula_table_s8``.

Semantics: TOSA 1.0 TABLE.  inputs: ``x`` and the constant ``table``; no attrs.

* int8: ``x`` int8 [...], ``table`` int8 [256] -> int8 [...]:  ``out = table[x + 128]``.
* int16 (no C kernel yet; see DESIGN.md): ``x`` int16 [...], ``table`` int16 [513] -> int32 [...]:
  ``index = (x + 32768) >> 7``, ``frac = x & 0x7F``,
  ``out = (table[index] << 7) + (table[index + 1] - table[index]) * frac``  (a 16.7 value).
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "TABLE"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    x, table = inputs
    if x.dtype == np.int8:
        need(table.dtype == np.int8 and table.shape == (256,), OP, "int8 TABLE needs a 256-entry int8 table")
        return table[x.astype(np.int32) + 128]
    need(x.dtype == np.int16, OP, f"input dtype {x.dtype} not int8/int16")
    need(table.dtype == np.int16 and table.shape == (513,), OP, "int16 TABLE needs a 513-entry int16 table")
    v = x.astype(np.int32) + 32768
    index, frac = v >> 7, v & 0x7F  # (x + 32768) & 0x7F == x & 0x7F
    t = table.astype(np.int32)
    return ((t[index] << 7) + (t[index + 1] - t[index]) * frac).astype(np.int32)
