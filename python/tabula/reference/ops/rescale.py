"""RESCALE int8/int16/int32/int48 -> int8/int16/int32: the spec of the ``tabula_rescale_<in>_<out>`` kernels.

Semantics: TOSA 1.0 RESCALE with ``double_round = false``, signed types.  Shapes: any ``[..., C]`` in,
same shape out.  attrs: ``input_zp``, ``output_zp``, ``multiplier`` and ``shift`` (lists of 1 entry =
per-tensor, or C entries = per-channel on the last axis), ``scale32`` (default true),
``output_dtype`` ("int8" when absent; the IR passes its output tensor's dtype).

    out = clamp(apply_scale(in - input_zp, m[c], s[c]) + output_zp, qmin, qmax)

``apply_scale`` is :func:`tabula.qmath.apply_scale_32_round_half_up` (``scale32``, multiplier in
[0, 2^31)) or :func:`tabula.qmath.apply_scale_16_round_half_up` (``scale32 = false``, multiplier in
[0, 2^15)): a single rounding, half toward +infinity.

Contract (ValueError otherwise): shift in [2, 62]; zero points as TOSA 1.0 allows them for signed
types -- ``input_zp`` non-zero only on an int8 input, ``output_zp`` non-zero only on an int8 output
(:func:`tabula.dtypes.zero_point_range`); an int48 input only with ``scale32 = false``.  Values: every
int48 input inside 48 bits, and (``scale32``, TOSA's REQUIRE in apply_scale_32) every
``in - input_zp`` inside ``[-2^(shift-1), 2^(shift-1))``.
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes
from tabula.qmath import apply_scale_16_round_half_up, apply_scale_32_round_half_up

from .._checks import TType, check_arrays, check_int48, check_zero_point, n_inputs, need, no_macs

OP = "RESCALE"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 1)
    (x,) = ins
    out_dtype = attrs.get("output_dtype", "int8")
    scale32 = bool(attrs.get("scale32", True))
    need(x.dtype in ("int8", "int16", "int32", "int48"), OP, f"input dtype {x.dtype} not int8/int16/int32/int48")
    need(out_dtype in ("int8", "int16", "int32"), OP, f"output dtype {out_dtype} not int8/int16/int32")
    need(x.dtype != "int48" or not scale32, OP, "int48 input needs scale32=false (TOSA)")
    m, s = list(attrs["multiplier"]), list(attrs["shift"])
    need(len(m) == len(s) and len(m) >= 1, OP, "multiplier and shift need the same number (>= 1) of entries")
    need(len(m) == 1 or (x.rank >= 1 and len(m) == x.shape[-1]), OP, f"{len(m)} multipliers for shape {x.shape}")
    m_end = 2**31 if scale32 else 2**15
    need(all(0 <= int(v) < m_end for v in m), OP,
         f"multiplier {m} outside [0, 2^{31 if scale32 else 15}) (scale32={scale32})")
    need(all(2 <= int(v) <= 62 for v in s), OP, f"shift {s} outside [2, 62]")
    check_zero_point(OP, "input_zp", attrs.get("input_zp", 0), x.dtype)
    check_zero_point(OP, "output_zp", attrs.get("output_zp", 0), out_dtype)
    return TType(x.shape, out_dtype)


def run(inputs: list[np.ndarray], attrs: dict, strict: bool = True) -> np.ndarray:
    """``strict`` (the interpreter's default): also enforce TOSA's apply_scale_32 REQUIRE on the values.
    ``strict=False`` computes the exact result for any value, as the C kernels do (their tests probe
    int32 extremes beyond the REQUIRE)."""
    out = check_arrays(contract, inputs, attrs)
    (x,) = inputs
    scale32 = bool(attrs.get("scale32", True))
    m = np.asarray(attrs["multiplier"], dtype=np.int64).reshape(-1)
    s = np.asarray(attrs["shift"], dtype=np.int64).reshape(-1)
    izp, ozp = int(attrs.get("input_zp", 0)), int(attrs.get("output_zp", 0))
    if x.dtype == np.int64:
        check_int48(OP, "int48 input holds values outside 48 bits", x)
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
    lo, hi = dtypes.range_of(out.dtype)
    return np.clip(apply_scale(v, m, s) + ozp, lo, hi).astype(dtypes.get(out.dtype).np)


macs = no_macs
#: No accumulator: nothing for :mod:`tabula.lowering.bound_accumulators_pass` to prove.
bound = None


def tosa(t, op, x: str | None = None, out: str | None = None) -> None:
    """TOSA 1.0 RESCALE: inputs ``x``, ``multiplier`` (CONST int32 [C or 1]; int16 when ``scale32`` is
    false), ``shift`` (CONST int8), ``input_zp`` (CONST [1] of the input type), ``output_zp`` (CONST [1]
    of the output type); attributes ``scale32``, ``rounding_mode`` SINGLE_ROUND (tabula never
    double-rounds), ``per_channel`` = more than one multiplier, signed input and output.  ``x`` / ``out``
    name other TOSA tensors of the same dtypes to read and write (a mapping that reshapes around it:
    FULLY_CONNECTED)."""
    a = op.attrs
    xt, yt = t.tensor(op.inputs[0]), t.tensor(op.outputs[0])
    scale32 = bool(a.get("scale32", True))
    m = np.atleast_1d(np.asarray(a["multiplier"], dtype=np.int64))
    sh = np.atleast_1d(np.asarray(a["shift"], dtype=np.int64))
    operands = [x or t.input(op, 0), t.const(m, "int32" if scale32 else "int16"), t.const(sh, "int8"),
                t.zp(a.get("input_zp", 0), xt.dtype), t.zp(a.get("output_zp", 0), yt.dtype)]
    t.emit("RESCALE", operands, [out or t.output(op)],
           t.attr("Rescale", scale32, t.RoundingMode.SINGLE_ROUND, bool(m.size > 1), False, False))


def from_tosa(r, top) -> None:
    """TOSA 1.0 RESCALE: ``multiplier`` (CONST int32, int16 when ``scale32`` is false), ``shift`` (CONST
    int8), ``input_zp``, ``output_zp`` (CONST [1]) -> attributes; ``per_channel`` gives one multiplier per
    channel of the last axis.  Unsupported (tabula implements neither): ``rounding_mode`` other than
    SINGLE_ROUND (DOUBLE_ROUND, INEXACT_ROUND), ``input_unsigned`` / ``output_unsigned`` (tabula's types
    are signed), and a 0 multiplier (the IR refuses it: every value would become the output zero point)."""
    a = top.attrs
    if a.get("rounding_mode") != "SINGLE_ROUND":
        raise r.unsupported(top, "rounding_mode", a.get("rounding_mode"),
                            "tabula rounds once, half toward +infinity: SINGLE_ROUND")
    for k in ("input_unsigned", "output_unsigned"):
        if a.get(k):
            raise r.unsupported(top, k, True, "tabula's types are signed")
    m = [int(v) for v in r.const(top, 1, "multiplier").reshape(-1)]
    s = [int(v) for v in r.const(top, 2, "shift").reshape(-1)]
    if not a.get("per_channel") and len(m) != 1:
        raise r.unsupported(top, "multiplier", f"of {len(m)} entries with per_channel false", "one expected")
    if 0 in m:
        raise r.unsupported(top, "multiplier", 0, "the IR refuses a 0 multiplier: every value would be the output zero point")
    r.emit(OP, top, [r.input(top, 0)], {"input_zp": r.scalar(top, 3, "input_zp"), "output_zp": r.scalar(top, 4, "output_zp"),
                                         "multiplier": m, "shift": s, "scale32": bool(a["scale32"])})
