"""ctypes calls of issue 25's kernels (comparisons, MAXIMUM / MINIMUM, the bitwise ops, SELECT, REVERSE,
REDUCE_MIN, ARGMAX) on the host kernel library, numpy in and out, and the checks their tests share: each
kernel against its Python reference (``tabula/reference/ops/<op>.py``) and numpy on random and edge
inputs.  Only ``lib`` (the ctypes library the manifest bound) is read from the ``kernel_lib`` fixture."""
from __future__ import annotations

import ctypes as C

import numpy as np

from tabula import dtypes, kernels
from tabula.codegen.ops._broadcast import collapse
from tabula.reference.ops import specs

OK = kernels.status_codes()["TABULA_OK"]
ERR_ARG = kernels.status_codes()["TABULA_ERR_ARG"]


_CT = {1: C.c_int8, 2: C.c_int16, 4: C.c_int32, 8: C.c_int64}


def _p(a: np.ndarray):
    """A typed pointer to ``a``'s data (the manifest binds typed pointer arguments; ``void *`` takes any)."""
    return a.ctypes.data_as(C.POINTER(_CT[a.itemsize]))


def _shape(s) -> np.ndarray:
    return np.ascontiguousarray(s, dtype=np.int32)


def _filled(shape, dtype) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    out.reshape(-1).view(np.uint8).fill(0x5A)  # an element the kernel forgets shows up
    return out


def binary(kernel_lib, name: str, a: np.ndarray, b: np.ndarray, out_dtype=None, merge: bool = True):
    """``tabula_<name>_<sfx>(a, a_shape, b, b_shape, rank, out)``: returns ``(status, out)``; ``merge``
    merges axes as codegen does (else the full shapes are passed)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    out = _filled(out_shape, out_dtype or a.dtype)
    sa, sb = collapse(a.shape, b.shape) if merge else (list(a.shape), list(b.shape))
    fn = getattr(kernel_lib.lib, f"tabula_{name}_{dtypes.of(a).sfx}")
    st = fn(_p(a), _shape(sa).ctypes.data_as(C.POINTER(C.c_int32)), _p(b), _shape(sb).ctypes.data_as(C.POINTER(C.c_int32)),
            len(sa), _p(out))
    return st, out


def check_binary(kernel_lib, rng, op: str, name: str, dtype: str, numpy_fn, out_dtype=None, values=None) -> None:
    """C == reference == ``numpy_fn`` on random shapes that broadcast (ranks 1..6, each axis held on
    either side, equal shapes), unmerged and merged, and on the dtype's extremes."""
    spec = specs()[op]
    lo, hi = dtypes.range_of(dtype)
    npt = dtypes.get(dtype).np
    draw = values or (lambda shape: rng.integers(lo, hi, shape, endpoint=True, dtype=np.int64).astype(npt))
    cases = [((7,), (7,)), ((7,), (1,)), ((1,), (5,)), ((3, 4), (3, 1)), ((2, 1, 4), (1, 3, 4)), ((2, 3, 4, 5), (1, 3, 1, 5)),
             ((1, 2, 1, 3, 1, 2), (2, 1, 3, 1, 2, 1)), ((4, 4, 8), (4, 4, 8))]
    for sa, sb in cases:
        a, b = draw(sa), draw(sb)
        want = spec.run([a, b], {})
        np.testing.assert_array_equal(want, numpy_fn(a.astype(np.int64), b.astype(np.int64)).astype(want.dtype))
        for merge in (False, True):
            st, got = binary(kernel_lib, name, a, b, out_dtype=want.dtype, merge=merge)
            assert st == OK, (sa, sb, merge)
            np.testing.assert_array_equal(got, want)
    edge = np.array([lo, lo + 1, -1, 0, 1, hi - 1, hi], dtype=np.int64)
    a, b = np.repeat(edge, 7).astype(npt), np.tile(edge, 7).astype(npt)  # every pair of extremes
    if values is None:
        want = spec.run([a, b], {})
        st, got = binary(kernel_lib, name, a, b, out_dtype=want.dtype)
        assert st == OK
        np.testing.assert_array_equal(got, want)


def check_binary_refusals(kernel_lib, name: str, dtype: str, out_dtype=None) -> None:
    """Shapes that do not broadcast and ranks outside 1..6 are TABULA_ERR_ARG."""
    npt = dtypes.get(dtype).np
    a, b, out = np.zeros(6, npt), np.zeros(6, npt), np.zeros(6, out_dtype or npt)
    fn = getattr(kernel_lib.lib, f"tabula_{name}_{dtypes.get(dtype).sfx}")
    i32 = C.POINTER(C.c_int32)
    for sa, sb, rank in (([2, 3], [3, 2], 2), ([6], [6], 0), ([6], [6], 7), ([-1], [1], 1)):
        pa, pb = _shape(sa + [1] * 8), _shape(sb + [1] * 8)
        assert fn(_p(a), pa.ctypes.data_as(i32), _p(b), pb.ctypes.data_as(i32), rank, _p(out)) == ERR_ARG, (sa, sb, rank)


def select(kernel_lib, c: np.ndarray, a: np.ndarray, b: np.ndarray, rank_shapes=None):
    """``tabula_select``: returns ``(status, out)``."""
    c, a, b = (np.ascontiguousarray(v) for v in (c, a, b))
    out = _filled(np.broadcast_shapes(c.shape, a.shape, b.shape), a.dtype)
    i32 = C.POINTER(C.c_int32)
    shapes = [_shape(s) for s in (rank_shapes or (c.shape, a.shape, b.shape))]
    st = kernel_lib.lib.tabula_select(c.ctypes.data_as(C.POINTER(C.c_int8)), shapes[0].ctypes.data_as(i32), _p(a),
                                      shapes[1].ctypes.data_as(i32), _p(b), shapes[2].ctypes.data_as(i32), a.ndim,
                                      a.itemsize, _p(out))
    return st, out


def around(shape, axis: int) -> tuple[int, int, int]:
    shape = [int(d) for d in shape]
    return int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1:]))


def reverse(kernel_lib, x: np.ndarray, axis: int):
    x = np.ascontiguousarray(x)
    outer, n, inner = around(x.shape, axis)
    out = _filled(x.shape, x.dtype)
    return kernel_lib.lib.tabula_reverse(_p(x), outer, n, inner * x.itemsize, _p(out)), out


def reduce(kernel_lib, name: str, x: np.ndarray, axis: int, out_shape, out_dtype=None):
    """``tabula_<name>_<sfx>(x, outer, axis_len, inner, out)`` (REDUCE_MIN, ARGMAX)."""
    x = np.ascontiguousarray(x)
    outer, n, inner = around(x.shape, axis)
    out = _filled(out_shape, out_dtype or x.dtype)
    return getattr(kernel_lib.lib, f"tabula_{name}_{dtypes.of(x).sfx}")(_p(x), outer, n, inner, _p(out)), out
