"""MATMUL int8 x int8 -> int32 and int16 x int16 -> int48: the spec of ``tabula_matmul_s8`` and
``tabula_matmul_s16``.

Semantics: TOSA 1.0 MATMUL (batched, two variable operands).  Shapes:
    a act [N, H, C], b act [N, C, W] (same dtype) -> acc [N, H, W]
(int8 -> int32; int16 -> int48).  attrs: ``a_zp``, ``b_zp`` (int8 range for int8; 0 for int16).

    out[n,h,w] = sum_c (a[n,h,c] - a_zp) * (b[n,c,w] - b_zp)

Exact int64 arithmetic; a result outside the accumulator (int32, or 48 bits for int16) raises (the IR
forbids wrapping; :mod:`tabula.lowering.bound_accumulators_pass` proves it cannot happen).
"""
from __future__ import annotations

import numpy as np
from tabula import dtypes

from .._checks import AccBound, TType, check_arrays, check_zero_point, input_reach, n_inputs, need, to_acc_exact

OP = "MATMUL"


def contract(ins: list[TType], attrs: dict) -> TType:
    n_inputs(OP, ins, 2)
    a, b = ins
    acc = dtypes.ACC_DTYPE.get(a.dtype)
    need(acc is not None and b.dtype == a.dtype, OP, f"dtypes must be int8, int8 or int16, int16 (got {a.dtype}, {b.dtype})")
    need(a.rank == 3 and b.rank == 3 and a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1], OP,
         f"a {a.shape} [N,H,C] / b {b.shape} [N,C,W] mismatch")
    check_zero_point(OP, "a_zp", attrs.get("a_zp", 0), a.dtype)
    check_zero_point(OP, "b_zp", attrs.get("b_zp", 0), b.dtype)
    return TType((a.shape[0], a.shape[1], b.shape[2]), acc)


def run(inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    out = check_arrays(contract, inputs, attrs)
    a, b = inputs
    azp, bzp = int(attrs.get("a_zp", 0)), int(attrs.get("b_zp", 0))
    acc = np.matmul(a.astype(np.int64) - azp, b.astype(np.int64) - bzp)
    return to_acc_exact(OP, acc, out.dtype)


def macs(ins: list[TType], out: TType, attrs: dict) -> int:
    """``N * H * W * C`` multiply-accumulates (``[N, H, C] x [N, C, W]``)."""
    return int(np.prod(out.shape, dtype=np.int64)) * int(ins[0].shape[-1])


def bound(ins: list[TType], attrs: dict, values: list) -> AccBound:
    """``|acc| <= C * input_reach(a, a_zp) * input_reach(b, b_zp)`` (``[1]``), to fit int32 (int8) or
    int48 (int16)."""
    a, b = ins
    reach = int(a.shape[-1]) * input_reach(a.dtype, attrs.get("a_zp", 0)) * input_reach(b.dtype, attrs.get("b_zp", 0))
    return AccBound(np.array([reach], np.int64), dtypes.ACC_DTYPE[a.dtype])


def tosa(t, op) -> None:
    """TOSA 1.0 MATMUL: inputs ``a`` [N, H, C], ``b`` [N, C, W], ``a_zp``, ``b_zp`` (CONST [1] of the
    input type) -> int32 (int8) or int48 (int16)."""
    dt = t.tensor(op.inputs[0]).dtype
    zps = [t.zp(op.attrs.get(k, 0), dt) for k in ("a_zp", "b_zp")]
    t.emit("MATMUL", [t.input(op, 0), t.input(op, 1), *zps], [t.output(op)], t.attr("MatMul"))


def from_tosa(r, top) -> None:
    """TOSA 1.0 MATMUL: ``a``, ``b`` and the zero points ``a_zp``, ``b_zp`` (CONST [1]) -> attributes."""
    r.emit(OP, top, [r.input(top, 0), r.input(top, 1)], {"a_zp": r.scalar(top, 2, "a_zp"), "b_zp": r.scalar(top, 3, "b_zp")})
