"""PAD: C (tabula_pad) == Python reference == numpy.pad, any rank and element size."""
from __future__ import annotations

import numpy as np
import pytest

from tabula import dtypes
from tabula.reference.ops import pad


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_pad_c_equals_reference_equals_numpy(kernel_lib, rng, dtype, rank):
    info = dtypes.of(np.dtype(dtype))  # int64 arrays hold int48
    for _ in range(8):
        shape = tuple(int(v) for v in rng.integers(0, 5, rank))
        x = rng.integers(info.lo, info.hi, shape, dtype=dtype, endpoint=True)
        pb = [int(v) for v in rng.integers(0, 3, rank)]
        pa = [int(v) for v in rng.integers(0, 3, rank)]
        value = int(rng.choice([info.lo, info.hi, 0, -3]))
        ref = pad.run([x], {"pad_before": pb, "pad_after": pa, "pad_value": value})
        np.testing.assert_array_equal(ref, np.pad(x, list(zip(pb, pa)), constant_values=value))
        np.testing.assert_array_equal(kernel_lib.pad(x, pb, pa, value), ref)


def test_pad_rejects_bad_arguments(kernel_lib):
    from tabula.harness.host import KernelError

    x = np.zeros((2, 2), np.int8)
    with pytest.raises(ValueError, match="PAD"):
        pad.run([x], {"pad_before": [0, -1], "pad_after": [0, 0], "pad_value": 0})
    with pytest.raises(ValueError, match="PAD"):
        pad.run([x], {"pad_before": [0, 0], "pad_after": [0, 0], "pad_value": 200})
    with pytest.raises(KernelError):  # rank 7 is outside the contract; nothing is read
        kernel_lib.call("tabula_pad", x, None, None, None, 7, 1, None, None)
