"""SLICE: C (tabula_slice) == Python reference == numpy slicing, any rank and element size."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import slice as slice_op


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_slice_c_equals_reference_equals_numpy(kernel_lib, rng, dtype, rank):
    for _ in range(10):
        shape = tuple(int(v) for v in rng.integers(1, 6, rank))
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)
        start = [int(rng.integers(0, d)) for d in shape]
        size = [int(rng.integers(0, d - b + 1)) for b, d in zip(start, shape)]
        ref = slice_op.run([x], {"start": start, "size": size})
        np.testing.assert_array_equal(ref, x[tuple(slice(b, b + n) for b, n in zip(start, size))])
        np.testing.assert_array_equal(kernel_lib.slice(x, start, size), ref)


def test_slice_rejects_out_of_bounds(kernel_lib):
    from tabula.harness.host import KernelError

    x = np.zeros((4, 4), np.int8)
    with pytest.raises(ValueError, match="SLICE"):
        slice_op.run([x], {"start": [2, 0], "size": [3, 4]})
    with pytest.raises(KernelError):
        kernel_lib.slice(x, [2, 0], [3, 4])
