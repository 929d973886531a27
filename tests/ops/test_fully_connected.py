"""FULLY_CONNECTED int8: C tabula_fully_connected_s8 == reference (tolerance 0), reference == numpy
float64 matmul, zero points at the int8 ends, int32 extremes, errors."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import fully_connected

# (N, Cin, Cout, input_zp, weight_zp)
CASES = [(1, 1, 1, 0, 0), (1, 16, 10, -5, 0), (3, 33, 7, 127, 0), (4, 64, 12, -128, 0), (2, 9, 5, 12, -7),
         (5, 20, 3, -128, 127), (2, 300, 4, 127, -128)]


def _random(rng, n, cin, cout, izp, wzp):
    x = rng.integers(-128, 127, (n, cin), endpoint=True, dtype=np.int8)
    w = rng.integers(-128, 127, (cout, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**24), 2**24, cout, dtype=np.int32)
    return x, w, b, {"input_zp": izp, "weight_zp": wzp}


@pytest.mark.host
@pytest.mark.parametrize("case", CASES, ids=str)
def test_c_equals_reference(kernel_lib, rng, case):
    x, w, b, a = _random(rng, *case)
    want = fully_connected.run([x, w, b], a)
    got = kernel_lib.fully_connected(x, w, b, **a)
    assert got.dtype == np.int32 and got.shape == (case[0], case[2])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, None, **a), want - b)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_equals_float_matmul(rng, case):
    x, w, b, a = _random(rng, *case)
    want = (x.astype(np.float64) - a["input_zp"]) @ (w.astype(np.float64) - a["weight_zp"]).T + b
    np.testing.assert_array_equal(fully_connected.run([x, w, b], a).astype(np.float64), want)


@pytest.mark.host
@pytest.mark.parametrize("target", [2**31 - 1, -(2**31)])
def test_int32_extremes(kernel_lib, target):
    cin = 1000
    x = np.full((1, cin), -128, dtype=np.int8)
    w = np.full((2, cin), -127 if target > 0 else 127, dtype=np.int8)  # (x - zp) = -255
    a = {"input_zp": 127, "weight_zp": 0}
    total = cin * (-255) * int(w[0, 0])
    b = np.full(2, target - total, dtype=np.int32)
    want = np.full((1, 2), target, dtype=np.int32)
    np.testing.assert_array_equal(fully_connected.run([x, w, b], a), want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, b, **a), want)


def test_reference_rejects_overflow_and_bad_zp():
    x = np.full((1, 2), -128, dtype=np.int8)
    w = np.full((1, 2), -128, dtype=np.int8)  # (-255) * (-255) per term: positive
    with pytest.raises(ValueError, match="overflow"):
        fully_connected.run([x, w, np.array([2**31 - 1], np.int32)], {"input_zp": 127, "weight_zp": 127})
    with pytest.raises(ValueError, match="weight_zp"):
        fully_connected.run([x, w, np.zeros(1, np.int32)], {"input_zp": 0, "weight_zp": -129})


@pytest.mark.host
@pytest.mark.parametrize("n, cin, cout, izp, wzp", [(0, 2, 2, 0, 0), (1, 0, 2, 0, 0), (1, 2, 0, 0, 0),
                                                    (1, 2, 2, 128, 0), (1, 2, 2, 0, -129)])
def test_c_rejects_bad_args(kernel_lib, n, cin, cout, izp, wzp):
    import kernel_lib as kl

    x = np.zeros((4, 4), np.int8)
    out = np.zeros((4, 4), np.int32)
    status = kernel_lib.lib.tabula_fully_connected_s8(n, cin, cout, x.ctypes.data_as(kl._i8p), izp,
                                                      x.ctypes.data_as(kl._i8p), wzp, None, None, out.ctypes.data_as(kl._i32p))
    assert status == kl.TABULA_ERR_ARG


# --- int16 x int8 -> int48 (tabula_fully_connected_s16) ------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("n, cin, cout, wzp", [(1, 1, 1, 0), (3, 33, 7, 0), (2, 300, 4, -128), (4, 64, 12, 127)], ids=str)
def test_s16_c_equals_reference_equals_float(kernel_lib, rng, n, cin, cout, wzp):
    x = rng.integers(-32768, 32767, (n, cin), endpoint=True, dtype=np.int16)
    w = rng.integers(-128, 127, (cout, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**44), 2**44, cout, dtype=np.int64)
    a = {"input_zp": 0, "weight_zp": wzp}
    want = fully_connected.run([x, w, b], a)
    assert want.dtype == np.int64
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, b, **a), want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, None, **a), want - b)
    np.testing.assert_array_equal((want - b).astype(np.float64), x.astype(np.float64) @ (w.astype(np.float64) - wzp).T)


@pytest.mark.host
@pytest.mark.parametrize("target", [2**47 - 1, -(2**47)])
def test_s16_int48_extremes(kernel_lib, target):
    cin = 1000
    x = np.full((1, cin), -32768, dtype=np.int16)
    w = np.full((2, cin), -127 if target > 0 else 127, dtype=np.int8)
    a = {"input_zp": 0, "weight_zp": -128}  # w - zp = 1 or 255
    total = cin * -32768 * (int(w[0, 0]) + 128)
    b = np.full(2, target - total, dtype=np.int64)
    want = np.full((1, 2), target, dtype=np.int64)
    np.testing.assert_array_equal(fully_connected.run([x, w, b], a), want)
    np.testing.assert_array_equal(kernel_lib.fully_connected(x, w, b, **a), want)
    with pytest.raises(ValueError, match="int48 accumulator overflow"):
        fully_connected.run([x, w, b + (1 if target > 0 else -1)], a)


def test_s16_reference_rejects():
    x = np.zeros((1, 2), np.int16)
    w = np.zeros((1, 2), np.int8)
    with pytest.raises(ValueError, match="input_zp"):
        fully_connected.run([x, w, np.zeros(1, np.int64)], {"input_zp": 1, "weight_zp": 0})
    with pytest.raises(ValueError, match="dtypes"):
        fully_connected.run([x, w, np.zeros(1, np.int32)], {"input_zp": 0, "weight_zp": 0})


@pytest.mark.host
@pytest.mark.parametrize("n, cin, cout, wzp", [(0, 2, 2, 0), (1, 0, 2, 0), (1, 2, 0, 0), (1, 2, 2, 128), (1, 2, 2, -129)])
def test_s16_c_rejects_bad_args(kernel_lib, n, cin, cout, wzp):
    import kernel_lib as kl

    x = np.zeros((4, 4), np.int16)
    w = np.zeros((4, 4), np.int8)
    out = np.zeros((4, 4), np.int64)
    status = kernel_lib.lib.tabula_fully_connected_s16(n, cin, cout, x.ctypes.data_as(kl._i16p), w.ctypes.data_as(kl._i8p),
                                                       wzp, None, None, out.ctypes.data_as(kl._i64p))
    assert status == kl.TABULA_ERR_ARG
