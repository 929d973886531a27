"""RESCALE int8/int16/int32/int64 -> int8/int16/int32: the executable spec of the
``tabula_rescale_<in>_<out>`` kernels.

Semantics: TOSA 1.0 RESCALE with ``double_round = false``.  Shapes: any ``[..., C]`` in, same shape
out.  attrs: ``input_zp``, ``output_zp``, ``multiplier`` and ``shift`` (lists of 1 entry =
per-tensor, or C entries = per-channel on the last axis), ``scale32`` (default true),
``output_dtype`` ("int8" when absent).

    out = clamp(apply_scale(in - input_zp, m[c], s[c]) + output_zp, qmin, qmax)

``apply_scale`` is :func:`tabula.qmath.apply_scale_32_round_half_up` (``scale32``, multiplier in
[0, 2^31)) or :func:`tabula.qmath.apply_scale_16_round_half_up` (``scale32 = false``, multiplier in
[0, 2^15)): a single rounding, half toward +infinity.  Contract (ValueError otherwise): shift in
[2, 62], zero points inside their dtype, ``input_zp == 0`` for int32/int64 input (TOSA: only
8/16-bit inputs carry a zero point), int64 input (TOSA int48) only with ``scale32 = false`` and every
value inside 48 bits, and (``scale32``, TOSA's REQUIRE in apply_scale_32) every ``in - input_zp``
inside ``[-2^(shift-1), 2^(shift-1))``.
"""
from __future__ import annotations

import numpy as np

from tabula.qmath import DTYPE_RANGE, apply_scale_16_round_half_up, apply_scale_32_round_half_up

from .._checks import check_int48, check_zero_point, need

OP = "RESCALE"


def run(inputs: list[np.ndarray], attrs: dict, strict: bool = True) -> np.ndarray:
    """``strict`` (the interpreter's default): also enforce TOSA's apply_scale_32 REQUIRE on the values.
    ``strict=False`` computes the exact result for any value, as the C kernels do (their tests probe
    int32 extremes beyond the REQUIRE)."""
    (x,) = inputs
    in_dtype, out_dtype = x.dtype.name, attrs.get("output_dtype", "int8")
    scale32 = bool(attrs.get("scale32", True))
    need(in_dtype in ("int8", "int16", "int32", "int64"), OP, f"input dtype {in_dtype} not int8/int16/int32/int64")
    need(out_dtype in ("int8", "int16", "int32"), OP, f"output dtype {out_dtype} not int8/int16/int32")
    need(in_dtype != "int64" or not scale32, OP, "int64 (int48) input needs scale32=false (TOSA)")
    m = np.asarray(attrs["multiplier"], dtype=np.int64).reshape(-1)
    s = np.asarray(attrs["shift"], dtype=np.int64).reshape(-1)
    need(m.size == s.size and m.size >= 1, OP, "multiplier and shift need the same number (>= 1) of entries")
    need(m.size == 1 or (x.ndim >= 1 and m.size == x.shape[-1]), OP, f"{m.size} multipliers for shape {x.shape}")
    m_end = 2**31 if scale32 else 2**15
    need(bool(np.all((m >= 0) & (m < m_end))), OP,
         f"multiplier {m.tolist()} outside [0, 2^{31 if scale32 else 15}) (scale32={scale32})")
    need(bool(np.all((s >= 2) & (s <= 62))), OP, f"shift {s.tolist()} outside [2, 62]")
    izp, ozp = int(attrs.get("input_zp", 0)), int(attrs.get("output_zp", 0))
    check_zero_point(OP, "input_zp", izp, in_dtype)
    check_zero_point(OP, "output_zp", ozp, out_dtype)
    need(in_dtype not in ("int32", "int64") or izp == 0, OP, f"input_zp={izp} on an {in_dtype} input (TOSA requires 0)")
    if in_dtype == "int64":
        check_int48(OP, "int64 input holds values outside int48", x)
    v = x.astype(np.int64) - izp
    if scale32 and strict:  # TOSA 1.0 apply_scale_32: REQUIRE(value >= -(1 << (shift-1)) && value < (1 << (shift-1)))
        lim = np.int64(1) << (np.broadcast_to(s, v.shape[-1:] if m.size > 1 else (1,)) - 1)
        bad = (v < -lim) | (v >= lim)
        if bad.any():
            need(False, OP, f"value {int(v[bad].reshape(-1)[0])} outside [-2^(shift-1), 2^(shift-1)) of its "
                            "shift (TOSA REQUIRE in apply_scale_32)")
    if m.size == 1:
        m, s = m[0], s[0]
    apply_scale = apply_scale_32_round_half_up if scale32 else apply_scale_16_round_half_up
    out = apply_scale(v, m, s) + ozp
    lo, hi = DTYPE_RANGE[out_dtype]
    return np.clip(out, lo, hi).astype(out_dtype)
