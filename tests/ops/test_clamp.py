"""CLAMP int8/int16: C == reference == numpy.clip on random data, bounds at the dtype ends, a single
allowed value (min == max), and argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import clamp

RANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_c_equals_reference(kernel_lib, rng, dtype):
    lo, hi = RANGE[dtype]
    x = rng.integers(lo, hi, (3, 5, 7), endpoint=True).astype(dtype)
    x.flat[:2] = lo, hi
    a, b = sorted(int(v) for v in rng.integers(lo, hi, 2, endpoint=True))
    bounds = [(lo, hi), (0, hi), (lo, 0), (a, b), (a, a), (lo, lo), (hi, hi), (-1, 1)]
    for mn, mx in bounds:
        want = clamp.run([x], {"min": mn, "max": mx})
        assert want.dtype == x.dtype and want.shape == x.shape
        np.testing.assert_array_equal(want, np.clip(x, mn, mx))
        np.testing.assert_array_equal(kernel_lib.clamp(x, mn, mx), want)
    np.testing.assert_array_equal(kernel_lib.clamp(x, lo, hi), x)  # full range: identity
    assert kernel_lib.clamp(np.zeros(0, dtype), lo, hi).size == 0


@pytest.mark.parametrize("dtype, mn, mx", [("int8", -129, 0), ("int8", 0, 128), ("int8", 5, 4), ("int16", -32769, 0),
                                           ("int16", 0, 32768), ("int16", 1, -1)])
def test_reference_rejects(dtype, mn, mx):
    with pytest.raises(ValueError, match="CLAMP"):
        clamp.run([np.zeros(3, dtype)], {"min": mn, "max": mx})


@pytest.mark.host
@pytest.mark.parametrize("dtype, mn, mx, count", [("int8", -129, 0, 4), ("int8", 0, 128, 4), ("int8", 5, 4, 4),
                                                  ("int8", 0, 1, -1), ("int16", -32769, 0, 4), ("int16", 0, 32768, 4),
                                                  ("int16", 1, -1, 4), ("int16", 0, 1, -1)])
def test_c_rejects(kernel_lib, dtype, mn, mx, count):
    from tabula.harness import host as kl

    x = np.zeros(4, dtype)
    out = np.full(4, 9, dtype)
    typ, sfx = kl._PTR[x.dtype]
    status = getattr(kernel_lib.lib, f"tabula_clamp_{sfx}")(x.ctypes.data_as(typ), count, mn, mx, out.ctypes.data_as(typ))
    assert status == kl.TABULA_ERR_ARG and np.all(out == 9)
