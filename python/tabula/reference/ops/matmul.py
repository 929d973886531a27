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

from .._checks import TType, check_arrays, check_zero_point, n_inputs, need, to_acc_exact

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
