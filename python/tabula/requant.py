"""The requantization block of the accumulator kernels, packed in one place.

CONV2D, DEPTHWISE_CONV2D and FULLY_CONNECTED take an optional ``const tabula_requant *requant``
(``firmware_templates/kernels/tabula_types.h``): the TOSA RESCALE after the accumulator op (one
multiplier and shift per output channel, input zero point 0), its output zero point, and its saturation
narrowed to a following CLAMP's bounds.  Codegen (:func:`tabula.codegen.fuse.fuse_requant`), the tests and
the benchmarks build it with :func:`pack`; the word order is read from the C declaration
(:func:`tabula.kernels.requant_fields`), so this module and the kernels cannot disagree.  :func:`unpack`
reads a block back and :func:`reference` applies one to accumulators through the Python reference
(RESCALE then CLAMP: the IR sequence the kernels' epilogue fuses).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import kernels

__all__ = ["Requant", "pack", "unpack", "reference"]


class Requant(NamedTuple):
    """A requantization block's values: ``multiplier`` and ``shift`` per output channel (int64 arrays)."""

    output_zp: int
    out_min: int
    out_max: int
    multiplier: np.ndarray
    shift: np.ndarray


def pack(output_zp: int, out_min: int, out_max: int, multiplier, shift) -> np.ndarray:
    """The int32 words of a ``tabula_requant`` with one channel per entry of ``multiplier`` / ``shift``
    (equal lengths; a scalar is one channel): the fixed fields in their C order, then per channel its
    ``tabula_channel_scale`` fields.  No range is checked here (the kernels refuse a block outside their contract with TABULA_ERR_ARG, and
    the tests rely on building such blocks)."""
    m = np.atleast_1d(np.asarray(multiplier, np.int64)).reshape(-1)
    s = np.atleast_1d(np.asarray(shift, np.int64)).reshape(-1)
    if m.size != s.size:
        raise ValueError(f"requant: {m.size} multipliers but {s.size} shifts")
    header, channel = kernels.requant_fields()
    values = {"output_zp": output_zp, "out_min": out_min, "out_max": out_max}
    per_channel = {"multiplier": m, "shift": s}
    unknown = [f for f in header if f not in values] + [f for f in channel if f not in per_channel]
    if unknown:
        raise kernels.ManifestError(f"tabula_types.h: tabula.requant.pack does not know the field(s) {unknown}")
    words = [int(values[f]) for f in header]
    words += np.stack([per_channel[f] for f in channel], axis=1).reshape(-1).tolist()
    return np.array(words, np.int64).astype(np.int32)


def unpack(block) -> Requant:
    """The values of a packed block (:func:`pack`'s inverse)."""
    b = np.asarray(block).astype(np.int64).reshape(-1)
    header, channel = kernels.requant_fields()
    head = dict(zip(header, (int(v) for v in b[:len(header)])))
    rows = b[len(header):].reshape(-1, len(channel))
    cols = {f: rows[:, i] for i, f in enumerate(channel)}
    return Requant(head["output_zp"], head["out_min"], head["out_max"], cols["multiplier"], cols["shift"])


def reference(acc: np.ndarray, block, wide: bool = False, out_dtype: str | None = None) -> np.ndarray:
    """What the kernels' epilogue computes from accumulators ``acc`` (last axis: output channels) and a
    block: the IR's RESCALE (per channel, input zero point 0; ``wide``: the int48 accumulator's
    apply_scale_16, else the int32 one's apply_scale_32) to ``out_dtype`` (default: int16 when ``wide``,
    else int8; the other one is a precision boundary's kernel, ``tabula_<op>_<in>_<out>``) then CLAMP to
    [out_min, out_max], through :mod:`tabula.reference`."""
    from .reference.ops import clamp, rescale

    r = unpack(block)
    out_dtype = out_dtype or ("int16" if wide else "int8")
    y = rescale.run([acc], {"input_zp": 0, "output_zp": r.output_zp, "multiplier": [int(v) for v in r.multiplier],
                            "shift": [int(v) for v in r.shift], "scale32": not wide,
                            "output_dtype": out_dtype}, strict=False)
    return clamp.run([y], {"min": r.out_min, "max": r.out_max})
