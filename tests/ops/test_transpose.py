"""TRANSPOSE: C tabula_transpose == reference == numpy.transpose for ranks 0..6 and element sizes
1/2/4, every permutation of small ranks, empty tensors, argument errors."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from tabula.reference.ops import transpose

DTYPES = ["int8", "int16", "int32"]


def _rand(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


@pytest.mark.host
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [2, 3, 4])
def test_every_permutation(kernel_lib, rng, dtype, rank):
    shape = tuple(int(v) for v in rng.integers(1, 6, rank))
    x = _rand(rng, shape, dtype)
    for perms in itertools.permutations(range(rank)):
        want = transpose.run([x], {"perms": list(perms)})
        np.testing.assert_array_equal(want, np.transpose(x, perms))
        assert want.flags.c_contiguous
        got = kernel_lib.transpose(x, perms)
        assert got.dtype == x.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.host
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 5, 6])
def test_random_permutations(kernel_lib, rng, dtype, rank):
    for _ in range(10):
        shape = tuple(int(v) for v in rng.integers(1, 5, rank))
        x = _rand(rng, shape, dtype)
        perms = [int(p) for p in rng.permutation(rank)]
        np.testing.assert_array_equal(kernel_lib.transpose(x, perms), np.transpose(x, perms))


@pytest.mark.host
def test_empty_and_nhwc_nchw(kernel_lib, rng):
    x = np.zeros((2, 0, 3), np.int8)
    assert kernel_lib.transpose(x, [2, 0, 1]).shape == (3, 2, 0)
    x = _rand(rng, (2, 5, 7, 3), "int8")  # NHWC -> NCHW and back
    nchw = kernel_lib.transpose(x, [0, 3, 1, 2])
    np.testing.assert_array_equal(nchw[1, 2, 4, 6], x[1, 4, 6, 2])
    np.testing.assert_array_equal(kernel_lib.transpose(nchw, [0, 2, 3, 1]), x)


def test_reference_rejects_bad_perms():
    with pytest.raises(ValueError, match="perms"):
        transpose.run([np.zeros((2, 3), np.int8)], {"perms": [0, 0]})


@pytest.mark.host
@pytest.mark.parametrize("perms, rank, elem", [([0, 0], 2, 1), ([0, 2], 2, 1), ([1, 0], 2, 3), ([1, 0], 2, 8),
                                               ([-1, 0], 2, 1), (list(range(7)), 7, 1)])
def test_c_rejects(kernel_lib, perms, rank, elem):
    from tabula.harness import host as kl

    x = np.zeros(64, np.int8)
    shape = np.full(8, 2, np.int32)
    p = np.array(perms + [0] * (8 - len(perms)), np.int32)
    status = kernel_lib.lib.tabula_transpose(x.ctypes.data, shape.ctypes.data_as(kl._i32p), p.ctypes.data_as(kl._i32p),
                                             rank, elem, x.ctypes.data)
    assert status == kl.TABULA_ERR_ARG
