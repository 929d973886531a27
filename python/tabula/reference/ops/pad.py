"""PAD: the executable spec of ``tabula_pad``.

Semantics: TOSA 1.0 PAD (constant mode).  Any dtype; attrs ``pad_before``, ``pad_after`` (one per
dim) and ``pad_value`` (an integer code, e.g. the zero point so the padding is real 0).
"""
from __future__ import annotations

import numpy as np

from .._checks import need

OP = "PAD"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    pb, pa = [int(v) for v in attrs["pad_before"]], [int(v) for v in attrs["pad_after"]]
    need(len(pb) == len(pa) == x.ndim and min(pb + pa) >= 0, OP, f"pads {pb} / {pa} for a {x.ndim}-D input")
    info = np.iinfo(x.dtype)
    value = int(attrs["pad_value"])
    need(info.min <= value <= info.max, OP, f"pad_value {value} outside {x.dtype}")
    return np.pad(x, list(zip(pb, pa)), mode="constant", constant_values=value)
