"""RESCALE int32->int8 and int8->int8: C == reference (tolerance 0) on random data and on pinned
edges: ties (half toward +infinity), saturation at both ends, multiplier 2^31-1, shifts 2 and 62,
zero points at the int8 ends, per-channel vs per-tensor, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.qmath import quantize_multiplier
from tabula.reference.ops import rescale

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _attrs(izp, ozp, m, s, out="int8") -> dict:
    return {"input_zp": izp, "output_zp": ozp, "multiplier": list(m), "shift": list(s), "output_dtype": out}


def _both(kernel_lib, x, a) -> np.ndarray:
    """Run C and the reference; assert they agree exactly; return the result."""
    want = rescale.run([x], a)
    got = kernel_lib.rescale(x, input_zp=a["input_zp"], output_zp=a["output_zp"], multiplier=a["multiplier"],
                             shift=a["shift"])
    assert want.dtype == got.dtype == np.int8 and want.shape == got.shape == x.shape
    np.testing.assert_array_equal(got, want)
    return want


def _params(rng, c):
    """Realistic (multiplier, shift) pairs from random scales, plus the raw extremes."""
    scales = np.exp2(rng.uniform(-30, 3, c))
    ms, ss = zip(*(quantize_multiplier(float(sc)) for sc in scales))
    return list(ms), list(ss)


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int32", "int8"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_c_equals_reference_random(kernel_lib, rng, dtype, per_channel):
    c = 7
    for _ in range(20):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 6)), c)
        if dtype == "int32":
            mag = 2 ** int(rng.integers(1, 32))
            x = rng.integers(max(-mag, I32_MIN), min(mag, I32_MAX), shape, endpoint=True).astype(np.int32)
            izp = 0
        else:
            x = rng.integers(-128, 127, shape, endpoint=True, dtype=np.int8)
            izp = int(rng.integers(-128, 127, endpoint=True))
        m, s = _params(rng, c if per_channel else 1)
        _both(kernel_lib, x, _attrs(izp, int(rng.integers(-128, 127, endpoint=True)), m, s))
    # raw random multipliers/shifts over the whole contract
    x = rng.integers(I32_MIN, I32_MAX, (50, c), endpoint=True).astype(np.int32)
    if dtype == "int8":
        x = x.astype(np.int8)
    n = c if per_channel else 1
    for _ in range(20):
        m = rng.integers(0, 2**31 - 1, n, endpoint=True).tolist()
        s = rng.integers(2, 62, n, endpoint=True).tolist()
        _both(kernel_lib, x, _attrs(0, int(rng.integers(-128, 127, endpoint=True)), m, s))


@pytest.mark.host
def test_ties_round_half_toward_plus_infinity(kernel_lib):
    # m = 2^30, s = 31: out = v / 2 rounded half up; -0.5 -> 0, +0.5 -> 1, -1.5 -> -1, 1.5 -> 2
    x = np.array([-5, -3, -1, 0, 1, 3, 5], dtype=np.int32)
    want = np.array([-2, -1, 0, 0, 1, 2, 3], dtype=np.int8)
    np.testing.assert_array_equal(_both(kernel_lib, x, _attrs(0, 0, [2**30], [31])), want)
    # int8 path: the tie is on (x - input_zp)
    x8 = (x + 10).astype(np.int8)
    np.testing.assert_array_equal(_both(kernel_lib, x8, _attrs(10, 0, [2**30], [31])), want)
    # a tie at a large shift: v * 2^30 / 2^50 = v / 2^20, v = (2k+1) 2^19
    xs = np.array([-3 * 2**19, -(2**19), 2**19, 3 * 2**19], dtype=np.int32)
    np.testing.assert_array_equal(_both(kernel_lib, xs, _attrs(0, 0, [2**30], [50])), [-1, 0, 1, 2])
    # and with an output zero point, rounding happens before it is added
    np.testing.assert_array_equal(_both(kernel_lib, x, _attrs(0, 100, [2**30], [31])), want.astype(np.int32) + 100)


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int32", "int8"])
def test_saturates_at_both_ends(kernel_lib, dtype):
    x = np.array([-1000, -129, -128, -1, 0, 1, 127, 128, 1000], dtype=np.int32)
    want = np.clip(x, -128, 127).astype(np.int8)
    if dtype == "int8":  # reach past the int8 range through the scale (x2) and the zero points
        x8 = np.array([-128, -65, -64, -1, 0, 1, 63, 64, 127], dtype=np.int8)
        got = _both(kernel_lib, x8, _attrs(0, 0, [2**30], [29]))  # x * 2
        np.testing.assert_array_equal(got, [-128, -128, -128, -2, 0, 2, 126, 127, 127])
        got = _both(kernel_lib, x8, _attrs(-128, 127, [2**30], [30]))  # (x + 128) + 127
        np.testing.assert_array_equal(got, np.full(9, 127))
        got = _both(kernel_lib, x8, _attrs(127, -128, [2**30], [30]))  # (x - 127) - 128
        np.testing.assert_array_equal(got, np.full(9, -128))
    else:
        np.testing.assert_array_equal(_both(kernel_lib, x, _attrs(0, 0, [2**30], [30])), want)
        ext = np.array([I32_MIN, I32_MAX], dtype=np.int32)
        np.testing.assert_array_equal(_both(kernel_lib, ext, _attrs(0, 0, [2**31 - 1], [2])), [-128, 127])


@pytest.mark.host
@pytest.mark.parametrize("shift", [2, 3, 30, 31, 32, 61, 62])
def test_multiplier_max_and_shift_ends(kernel_lib, shift):
    x = np.array([I32_MIN, I32_MIN + 1, -(2**20) - 1, -1, 0, 1, 2**20 + 1, I32_MAX], dtype=np.int32)
    for m in (2**31 - 1, 2**30, 1, 0):
        got = _both(kernel_lib, x, _attrs(0, 0, [m], [shift]))
        exact = [min(127, max(-128, (int(v) * m + 2 ** (shift - 1)) >> shift)) for v in x]
        np.testing.assert_array_equal(got, exact)
    # shift 62, m = 2^31-1: INT32_MIN * m / 2^62 = -(1 - 2^-31) -> -1;  INT32_MAX * m / 2^62 = 1 - 2^-30 -> 1;
    # a quarter of that rounds to 0 (-0.25 and +0.25)
    if shift == 62:
        got = _both(kernel_lib, np.array([I32_MIN, I32_MAX, -(2**29), 2**29], np.int32), _attrs(0, 0, [2**31 - 1], [62]))
        np.testing.assert_array_equal(got, [-1, 1, 0, 0])


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int32", "int8"])
def test_per_channel_vs_per_tensor(kernel_lib, rng, dtype):
    c = 5
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (6, 3, c), endpoint=True).astype(dtype)
    if dtype == "int32":
        x = (x >> 12).astype(np.int32)
    m, s = _params(rng, c)
    izp = 0 if dtype == "int32" else -128
    per_ch = _both(kernel_lib, x, _attrs(izp, 3, m, s))
    for ch in range(c):  # channel ch of the per-channel result == per-tensor with that channel's pair
        col = np.ascontiguousarray(x[..., ch])
        np.testing.assert_array_equal(per_ch[..., ch], _both(kernel_lib, col, _attrs(izp, 3, [m[ch]], [s[ch]])))
    same = _both(kernel_lib, x, _attrs(izp, 3, [m[0]] * c, [s[0]] * c))
    np.testing.assert_array_equal(same, _both(kernel_lib, x, _attrs(izp, 3, [m[0]], [s[0]])))
    assert not np.array_equal(per_ch, same)  # the channels really used different parameters


def test_reference_int16_output_and_input():
    x = np.array([-70000, -40000, 1, 40000, 70000], dtype=np.int32)
    got = rescale.run([x], _attrs(0, 0, [2**30], [30], out="int16"))
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, [-32768, -32768, 1, 32767, 32767])
    x16 = np.array([-32768, -3, 3, 32767], dtype=np.int16)
    got = rescale.run([x16], _attrs(0, 0, [2**30], [32]))  # x / 4, int8
    np.testing.assert_array_equal(got, [-128, -1, 1, 127])
    assert rescale.run([x16], {"input_zp": 0, "output_zp": 0, "multiplier": [2**30], "shift": [32]}).dtype == np.int8


@pytest.mark.parametrize(
    "dtype, attrs, match",
    [
        ("int32", _attrs(0, 0, [2**30], [1]), "shift"),
        ("int32", _attrs(0, 0, [2**30], [63]), "shift"),
        ("int32", _attrs(0, 0, [-1], [31]), "multiplier"),
        ("int32", _attrs(0, 0, [2**31], [31]), "multiplier"),
        ("int32", _attrs(1, 0, [2**30], [31]), "input_zp"),
        ("int32", _attrs(0, 128, [2**30], [31]), "output_zp"),
        ("int8", _attrs(-129, 0, [2**30], [31]), "input_zp"),
        ("int8", _attrs(0, 0, [2**30] * 3, [31] * 3), "multipliers"),
        ("int8", _attrs(0, 0, [2**30] * 4, [31] * 3), "same number"),
    ],
)
def test_reference_rejects(dtype, attrs, match):
    with pytest.raises(ValueError, match=match):
        rescale.run([np.zeros((2, 4), dtype=dtype)], attrs)


@pytest.mark.host
@pytest.mark.parametrize(
    "dtype, izp, ozp, m, s, count, channels, per_channel",
    [
        ("int32", 0, 0, 2**30, 1, 8, 1, 0),
        ("int32", 0, 0, 2**30, 63, 8, 1, 0),
        ("int32", 0, 0, -1, 31, 8, 1, 0),
        ("int32", 5, 0, 2**30, 31, 8, 1, 0),  # TOSA: int32 input has no zero point
        ("int32", 0, 128, 2**30, 31, 8, 1, 0),
        ("int8", 128, 0, 2**30, 31, 8, 1, 0),
        ("int8", 0, -129, 2**30, 31, 8, 1, 0),
        ("int8", 0, 0, 2**30, 31, 8, 3, 1),  # count % channels != 0
        ("int8", 0, 0, 2**30, 31, -1, 1, 0),
        ("int8", 0, 0, 2**30, 31, 8, 0, 0),
    ],
)
def test_c_rejects(kernel_lib, dtype, izp, ozp, m, s, count, channels, per_channel):
    import kernel_lib as kl

    x = np.zeros(8, dtype=dtype)
    out = np.full(8, 99, dtype=np.int8)
    ms, ss = np.full(8, m, np.int32), np.full(8, s, np.int32)
    fn = kernel_lib.lib.tabula_rescale_s32_s8 if dtype == "int32" else kernel_lib.lib.tabula_rescale_s8_s8
    xp = x.ctypes.data_as(kl._i32p if dtype == "int32" else kl._i8p)
    status = fn(xp, count, channels, izp, ozp, ms.ctypes.data_as(kl._i32p), ss.ctypes.data_as(kl._i32p), per_channel,
                out.ctypes.data_as(kl._i8p))
    assert status == kl.TABULA_ERR_ARG
    assert np.all(out == 99)  # nothing written


@pytest.mark.host
def test_c_rejects_bad_channel_param(kernel_lib):
    # only channel 2 of 4 is out of contract: per-channel validation must look at every entry
    import kernel_lib as kl

    x = np.zeros((2, 4), np.int32)
    with pytest.raises(kl.KernelError):
        kernel_lib.rescale(x, input_zp=0, output_zp=0, multiplier=[2**30] * 4, shift=[31, 31, 63, 31])
