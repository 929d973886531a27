"""TILE: C == reference == numpy ``tile`` for ranks 1..6, element sizes 1..8, multiples 1..4 on every
dim (the softmax's [N, 1] -> [N, C] among them); empty inputs; the contract's refusals."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import tile


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_random_shapes_and_multiples(kernel_lib, rng, dtype):
    for rank in range(1, 7):
        shape = tuple(int(v) for v in rng.integers(1, 4, rank))
        mult = [int(v) for v in rng.integers(1, 5, rank)]
        x = rng.integers(-100, 100, shape).astype(dtype)
        want = tile.run([x], {"multiples": mult})
        np.testing.assert_array_equal(want, np.tile(x, mult))
        np.testing.assert_array_equal(kernel_lib.tile(x, mult), want)


@pytest.mark.host
def test_a_row_statistic_tiled_along_the_row(kernel_lib, rng):
    m = rng.integers(-2**31, 2**31, (5, 1), dtype=np.int64).astype(np.int32)
    np.testing.assert_array_equal(kernel_lib.tile(m, [1, 12]), np.repeat(m, 12, axis=1))
    m4 = rng.integers(-9, 9, (1, 3, 1, 4)).astype(np.int32)  # NHWC, reduced over W
    np.testing.assert_array_equal(kernel_lib.tile(m4, [1, 1, 7, 1]), np.repeat(m4, 7, axis=2))


@pytest.mark.host
def test_empty_input(kernel_lib):
    x = np.zeros((0, 3), np.int16)
    assert kernel_lib.tile(x, [2, 2]).shape == (0, 6) == tile.run([x], {"multiples": [2, 2]}).shape


def test_contract():
    x = np.zeros((2, 3), np.int8)
    with pytest.raises(ValueError, match=">= 1"):
        tile.run([x], {"multiples": [1, 0]})
    with pytest.raises(ValueError, match="2 integers"):
        tile.run([x], {"multiples": [2]})


@pytest.mark.host
def test_c_rejects_bad_arguments(kernel_lib):
    from tabula.harness import host as kl

    x, shape = np.zeros(8, np.int8), np.array([2, 2], np.int32)
    for mult, rank, elem in (([1, 0], 2, 1), ([1, 1], 0, 1), ([1, 1], 7, 1), ([1, 1], 2, 9)):
        m = np.array(mult, np.int32)
        assert kernel_lib.lib.tabula_tile(x.ctypes.data, shape.ctypes.data_as(kl._i32p), m.ctypes.data_as(kl._i32p),
                                          rank, elem, x.ctypes.data) == kl.TABULA_ERR_ARG
