"""INTDIV int32: C == reference == truncation toward zero on random signs and magnitudes and at the
int32 ends; a zero divisor and -2^31 / -1 refused by both (TOSA REQUIREs them away)."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import intdiv

I32 = np.iinfo(np.int32)


def _trunc(a, b):
    return [int(x / y) if abs(x) < 2**52 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a, b)]


@pytest.mark.host
def test_random_signs_and_magnitudes(kernel_lib, rng):
    a = rng.integers(I32.min + 1, I32.max, 4000, endpoint=True, dtype=np.int64)
    b = np.where(rng.random(4000) < 0.5, rng.integers(1, 1000, 4000), rng.integers(1, I32.max, 4000, endpoint=True))
    b = (b * np.where(rng.random(4000) < 0.5, -1, 1)).astype(np.int64)
    a, b = a.astype(np.int32), b.astype(np.int32)
    want = intdiv.run([a, b], {})
    np.testing.assert_array_equal(want, _trunc(a.tolist(), b.tolist()))
    np.testing.assert_array_equal(kernel_lib.intdiv(a, b), want)


@pytest.mark.host
def test_truncates_toward_zero_at_the_ends(kernel_lib):
    a = np.array([7, -7, 7, -7, I32.max, I32.min, I32.min, I32.max, 0, 1, -1], np.int32)
    b = np.array([2, 2, -2, -2, -1, 1, 2, I32.max, -5, I32.min, I32.min], np.int32)
    want = [3, -3, -3, 3, -I32.max, I32.min, I32.min // 2, 1, 0, 0, 0]
    np.testing.assert_array_equal(intdiv.run([a, b], {}), want)
    np.testing.assert_array_equal(kernel_lib.intdiv(a, b), want)


@pytest.mark.host
@pytest.mark.parametrize("a,b,msg", [(5, 0, "zero"), (I32.min, -1, "leaves int32")])
def test_refused(kernel_lib, a, b, msg):
    from tabula.harness import host as kl

    x, y = np.array([1, a], np.int32), np.array([1, b], np.int32)
    with pytest.raises(ValueError, match=msg):
        intdiv.run([x, y], {})
    with pytest.raises(kl.KernelError):
        kernel_lib.intdiv(x, y)
