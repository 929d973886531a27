"""MATMUL int8 x int8 -> int32 and int16 x int16 -> int48: C tabula_matmul_s8/_s16 == reference
(tolerance 0) == float64 matmul, on random data, zero points at the int8 ends, sums landing exactly on
the accumulator's ends, shapes with 1s, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import matmul

# (N, H, C, W, a_zp, b_zp)
CASES_S8 = [(1, 1, 1, 1, 0, 0), (1, 4, 8, 4, -5, 3), (2, 7, 33, 5, 127, -128), (3, 16, 16, 16, -128, 127),
            (1, 1, 300, 9, 12, -7), (4, 9, 1, 13, 0, 0)]
CASES_S16 = [(1, 1, 1, 1), (2, 5, 17, 3), (1, 16, 64, 16), (3, 1, 300, 2)]


def _rand(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)


@pytest.mark.host
@pytest.mark.parametrize("case", CASES_S8, ids=str)
def test_s8_c_equals_reference_equals_float(kernel_lib, rng, case):
    n, h, c, w, azp, bzp = case
    a, b = _rand(rng, np.int8, (n, h, c)), _rand(rng, np.int8, (n, c, w))
    attrs = {"a_zp": azp, "b_zp": bzp}
    want = matmul.run([a, b], attrs)
    assert want.dtype == np.int32 and want.shape == (n, h, w)
    np.testing.assert_array_equal(want.astype(np.float64), (a.astype(np.float64) - azp) @ (b.astype(np.float64) - bzp))
    np.testing.assert_array_equal(kernel_lib.matmul(a, b, **attrs), want)


@pytest.mark.host
@pytest.mark.parametrize("case", CASES_S16, ids=str)
def test_s16_c_equals_reference_equals_float(kernel_lib, rng, case):
    n, h, c, w = case
    a, b = _rand(rng, np.int16, (n, h, c)), _rand(rng, np.int16, (n, c, w))
    a.flat[0], b.flat[0] = -32768, -32768  # the largest product, (-32768)^2 = 2^30
    want = matmul.run([a, b], {"a_zp": 0, "b_zp": 0})
    assert want.dtype == np.int64
    np.testing.assert_array_equal(want.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_array_equal(kernel_lib.matmul(a, b), want)


@pytest.mark.host
def test_s8_sums_up_to_the_int32_end(kernel_lib):
    # (a - a_zp) = -255 and (b - b_zp) = -255: every product is +65025 (or with b_zp = -128, -255 * 255)
    c = 2**31 // 65025  # 33025 products: 2,147,450,625 <= INT32_MAX
    a = np.full((1, 1, c), -128, np.int8)
    b = np.full((1, c, 2), -128, np.int8)
    b[0, :, 1] = 127
    got = kernel_lib.matmul(a, b, a_zp=127, b_zp=127)
    want = matmul.run([a, b], {"a_zp": 127, "b_zp": 127})
    np.testing.assert_array_equal(got, want)
    assert int(want[0, 0, 0]) == c * 65025 and int(want[0, 0, 1]) == 0
    with pytest.raises(ValueError, match="int32 accumulator overflow"):
        matmul.run([np.full((1, 1, c + 1), -128, np.int8), np.full((1, c + 1, 1), -128, np.int8)],
                   {"a_zp": 127, "b_zp": 127})


@pytest.mark.host
def test_s16_sums_reach_beyond_32_bits(kernel_lib):
    c = 4096  # 4096 * 2^30 = 2^42: needs the int48 accumulator
    a = np.full((1, 2, c), -32768, np.int16)
    b = np.full((1, c, 1), -32768, np.int16)
    a[0, 1] = 32767
    want = matmul.run([a, b], {})
    assert int(want[0, 0, 0]) == 2**42 and int(want[0, 1, 0]) == -32767 * 32768 * c
    np.testing.assert_array_equal(kernel_lib.matmul(a, b), want)


@pytest.mark.parametrize("ins, attrs, match", [
    ([np.zeros((1, 2, 3), np.int8), np.zeros((1, 4, 5), np.int8)], {}, "mismatch"),
    ([np.zeros((2, 3), np.int8), np.zeros((3, 5), np.int8)], {}, "mismatch"),
    ([np.zeros((1, 2, 3), np.int8), np.zeros((1, 3, 5), np.int16)], {}, "dtypes"),
    ([np.zeros((1, 2, 3), np.int16), np.zeros((1, 3, 5), np.int16)], {"a_zp": 1}, "a_zp"),
    ([np.zeros((1, 2, 3), np.int8), np.zeros((1, 3, 5), np.int8)], {"b_zp": 128}, "b_zp"),
])
def test_reference_rejects(ins, attrs, match):
    with pytest.raises(ValueError, match=match):
        matmul.run(ins, attrs)


@pytest.mark.host
@pytest.mark.parametrize("dtype, n, h, c, w, azp, bzp", [
    ("int8", 0, 1, 1, 1, 0, 0), ("int8", 1, 0, 1, 1, 0, 0), ("int8", 1, 1, 0, 1, 0, 0), ("int8", 1, 1, 1, 0, 0, 0),
    ("int8", 1, 1, 1, 1, 128, 0), ("int8", 1, 1, 1, 1, 0, -129), ("int16", 1, 1, 1, 1, 1, 0), ("int16", 1, 1, 1, 1, 0, -1),
])
def test_c_rejects_bad_args(kernel_lib, dtype, n, h, c, w, azp, bzp):
    from tabula.harness import host as kl

    x = np.zeros(16, dtype)
    out = np.zeros(16, np.int64)
    typ, sfx = kl._PTR[np.dtype(dtype)]
    acc = kl._i32p if dtype == "int8" else kl._i64p
    status = getattr(kernel_lib.lib, f"tabula_matmul_{sfx}")(n, h, c, w, x.ctypes.data_as(typ), azp, x.ctypes.data_as(typ),
                                                             bzp, out.ctypes.data_as(acc))
    assert status == kl.TABULA_ERR_ARG
