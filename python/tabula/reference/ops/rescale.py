"""RESCALE int8/int16/int32 -> int8/int16: the executable spec of ``tabula_rescale_s32_s8`` and
``tabula_rescale_s8_s8``.

Semantics: TOSA 1.0 RESCALE with ``scale32 = true``, ``double_round = false``.  Shapes: any
``[..., C]`` in, same shape out.  attrs: ``input_zp``, ``output_zp``, ``multiplier`` and ``shift``
(lists of 1 entry = per-tensor, or C entries = per-channel on the last axis), ``output_dtype``
("int8" when absent).

    out = clamp(apply_scale_32(in - input_zp, m[c], s[c]) + output_zp, qmin, qmax)

``apply_scale_32`` is :func:`tabula.qmath.apply_scale_32_round_half_up`: a single rounding, half
toward +infinity.  Contract (ValueError otherwise): multiplier in [0, 2^31), shift in [2, 62],
zero points inside their dtype, and ``input_zp == 0`` for int32 input (TOSA: only 8/16-bit inputs
carry a zero point, so ``in - input_zp`` stays in int32).
"""
from __future__ import annotations

import numpy as np

from tabula.qmath import DTYPE_RANGE, apply_scale_32_round_half_up

from .._checks import check_zero_point, need

OP = "RESCALE"


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    (x,) = inputs
    in_dtype, out_dtype = x.dtype.name, attrs.get("output_dtype", "int8")
    need(in_dtype in ("int8", "int16", "int32"), OP, f"input dtype {in_dtype} not int8/int16/int32")
    need(out_dtype in ("int8", "int16"), OP, f"output dtype {out_dtype} not int8/int16")
    m = np.asarray(attrs["multiplier"], dtype=np.int64).reshape(-1)
    s = np.asarray(attrs["shift"], dtype=np.int64).reshape(-1)
    need(m.size == s.size and m.size >= 1, OP, "multiplier and shift need the same number (>= 1) of entries")
    need(m.size == 1 or (x.ndim >= 1 and m.size == x.shape[-1]), OP, f"{m.size} multipliers for shape {x.shape}")
    need(bool(np.all((m >= 0) & (m < 2**31))), OP, f"multiplier {m.tolist()} outside [0, 2^31)")
    need(bool(np.all((s >= 2) & (s <= 62))), OP, f"shift {s.tolist()} outside [2, 62]")
    izp, ozp = int(attrs.get("input_zp", 0)), int(attrs.get("output_zp", 0))
    check_zero_point(OP, "input_zp", izp, in_dtype)
    check_zero_point(OP, "output_zp", ozp, out_dtype)
    need(in_dtype != "int32" or izp == 0, OP, f"input_zp={izp} on an int32 input (TOSA requires 0)")
    v = x.astype(np.int64) - izp
    if m.size == 1:
        m, s = m[0], s[0]
    out = apply_scale_32_round_half_up(v, m, s) + ozp
    lo, hi = DTYPE_RANGE[out_dtype]
    return np.clip(out, lo, hi).astype(out_dtype)
