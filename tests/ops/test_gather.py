"""GATHER: C == reference == numpy ``take_along_axis`` on random values and indices (int8 / int16 / int32;
N 1..3, K 1..9, C 1..17 -- tails of a 16-byte vector, C = 1 -- and W = 1), on the edge indices (first and
last row, every row repeated, every index the same), on the host and under QEMU on the M55; the kernel's and
the contract's refusals (an index outside [0, K) writes nothing)."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import kernel_targets
from tabula import dtypes
from tabula.harness.host import TABULA_ERR_ARG
from tabula.reference.ops import gather

DTYPES = ["int8", "int16", "int32"]


def _values(rng, shape, dtype):
    lo, hi = dtypes.range_of(dtype)
    return rng.integers(lo, hi, shape, endpoint=True, dtype=np.int64).astype(dtypes.get(dtype).np)


def _cases(rng):
    """``(values, indices)``: random shapes and the edge index patterns, each dtype."""
    for dtype in DTYPES:
        for n, k, c, w in ((1, 1, 1, 1), (1, 9, 16, 5), (2, 5, 17, 1), (3, 4, 15, 7), (1, 7, 3, 12), (2, 2, 1, 9),
                           (1, 16, 4, 8)):
            v = _values(rng, (n, k, c), dtype)
            yield v, rng.integers(0, k, (n, w)).astype(np.int32)
        v = _values(rng, (2, 6, 5), dtype)
        yield v, np.array([[0, 5, 0, 5], [5, 0, 5, 0]], np.int32)      # first and last rows
        yield v, np.array([[3, 3, 3, 3], [1, 1, 1, 1]], np.int32)      # one row repeated
        yield v, np.tile(np.arange(6, dtype=np.int32), (2, 2))          # every row, twice
        lo, hi = dtypes.range_of(dtype)
        ends = np.array([[[lo, hi, 0]], [[hi, lo, -1]]], dtypes.get(dtype).np).reshape(1, 2, 3)
        yield ends, np.array([[1, 0, 1]], np.int32)                     # the dtype's extremes moved unchanged


@pytest.mark.parametrize("target", kernel_targets("host", "m55"))
def test_c_equals_the_reference_on_random_and_edge_indices(kernel_lib, device_lib, rng, target):
    lib = kernel_lib if target == "host" else device_lib(target)
    cases = list(_cases(rng))
    wants = []
    for v, i in cases:
        want = gather.run([v, i], {})
        np.testing.assert_array_equal(want, np.take_along_axis(v, i[:, :, None].astype(np.int64), axis=1))
        assert want.dtype == v.dtype and want.shape == (v.shape[0], i.shape[1], v.shape[2])
        wants.append(want)
    with lib.batch():
        gots = [lib.gather(v, i) for v, i in cases]
    for got, want in zip(gots, wants):
        np.testing.assert_array_equal(got, want)


@pytest.mark.host
def test_c_rejects_an_index_outside_the_rows_and_writes_nothing(kernel_lib):
    v = np.arange(12, dtype=np.int8).reshape(1, 4, 3)
    for bad in (4, -1, 2**31 - 1):
        i = np.array([[0, 1, bad]], np.int32)
        out = np.full((1, 3, 3), 99, np.int8)
        assert kernel_lib.status("tabula_gather", v, i, 1, 4, 3, 3, out) == TABULA_ERR_ARG
        assert (out == 99).all()
    out = np.zeros(3, np.int8)
    i = np.zeros((1, 1), np.int32)
    for n, k, w, row in ((-1, 4, 1, 3), (1, 0, 1, 3), (1, 4, -1, 3), (1, 4, 1, -1)):
        assert kernel_lib.status("tabula_gather", v, i, n, k, w, row, out) == TABULA_ERR_ARG


def test_contract():
    v, i = np.zeros((1, 4, 2), np.int8), np.zeros((1, 3), np.int32)
    assert gather.contract([gather.TType((2, 4, 3), "int16"), gather.TType((2, 5), "int32")], {}) == \
        gather.TType((2, 5, 3), "int16")
    with pytest.raises(ValueError, match="outside \\[0, 4\\)"):
        gather.run([v, np.array([[0, 4, 1]], np.int32)], {})
    with pytest.raises(ValueError, match="outside \\[0, 4\\)"):
        gather.run([v, np.array([[-1, 0, 1]], np.int32)], {})
    with pytest.raises(ValueError, match="int32"):
        gather.run([v, i.astype(np.int16)], {})
    with pytest.raises(ValueError, match="N, K, C"):
        gather.run([v[0], i], {})
    with pytest.raises(ValueError, match="N = 2"):
        gather.run([v, np.zeros((2, 3), np.int32)], {})
    with pytest.raises(ValueError, match="int8, int16 or int32 only"):
        gather.run([v.astype(np.int64), i], {})
