"""CONCAT: C tabula_concat == reference == numpy.concatenate for 1..4 inputs along every axis of 2-D
and 4-D tensors with element sizes 1, 2 and 4 (and 8), empty inputs, errors."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import concat


def _rand(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32"])
@pytest.mark.parametrize("rank", [2, 4])
@pytest.mark.parametrize("n_inputs", [1, 2, 3, 4])
def test_c_equals_reference_every_axis(kernel_lib, rng, dtype, rank, n_inputs):
    base = [int(v) for v in rng.integers(1, 5, rank)]
    for axis in range(rank):
        xs = []
        for _ in range(n_inputs):
            shape = list(base)
            shape[axis] = int(rng.integers(1, 4))
            xs.append(_rand(rng, shape, dtype))
        want = concat.run(xs, {"axis": axis, "output_dtype": dtype})
        np.testing.assert_array_equal(want, np.concatenate(xs, axis=axis))
        got = kernel_lib.concat(xs, axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.host
def test_empty_inputs_and_int64(kernel_lib, rng):
    a, b = _rand(rng, (2, 3, 4), "int16"), np.zeros((2, 0, 4), np.int16)
    for xs in ([a, b], [b, a, b], [b]):
        np.testing.assert_array_equal(kernel_lib.concat(xs, 1), np.concatenate(xs, axis=1))
        np.testing.assert_array_equal(concat.run(xs, {"axis": 1}), np.concatenate(xs, axis=1))
    x = _rand(rng, (3, 2), "int64")  # any element size: the kernel copies bytes
    np.testing.assert_array_equal(kernel_lib.concat([x, x[:, :1]], 1), np.concatenate([x, x[:, :1]], axis=1))


@pytest.mark.parametrize("xs, axis, match", [
    ([np.zeros((2, 3), np.int8), np.zeros((2, 3), np.int16)], 0, "int16"),
    ([np.zeros((2, 3), np.int8), np.zeros((3, 3), np.int8)], 1, "shape"),
    ([np.zeros((2, 3), np.int8), np.zeros((2, 3, 1), np.int8)], 0, "shape"),
    ([np.zeros((2, 3), np.int8)], 2, "axis"),
    ([np.zeros((2, 3), np.int8)], -1, "axis"),
    ([], 0, "at least one"),
])
def test_reference_rejects(xs, axis, match):
    with pytest.raises(ValueError, match=match):
        concat.run(xs, {"axis": axis})


@pytest.mark.host
@pytest.mark.parametrize("n_inputs, outer, inner", [(0, 1, [4]), (1, -1, [4]), (2, 1, [4, -1])])
def test_c_rejects(kernel_lib, n_inputs, outer, inner):
    import ctypes

    from tabula.harness import host as kl

    x = np.zeros(8, np.int8)
    out = np.full(16, 9, np.int8)
    ptrs = (ctypes.c_void_p * 2)(x.ctypes.data, x.ctypes.data)
    sizes = np.array(inner + [0] * (2 - len(inner)), np.int32)
    status = kernel_lib.lib.tabula_concat(ptrs, sizes.ctypes.data_as(kl._i32p), n_inputs, outer, out.ctypes.data)
    assert status == kl.TABULA_ERR_ARG and np.all(out == 9)
