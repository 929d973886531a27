"""RESCALE int32->int8 and int8->int8: C == reference (tolerance 0) on random data and on pinned
edges: ties (half toward +infinity), saturation at both ends, multiplier 2^31-1, shifts 2 and 62,
zero points at the int8 ends, per-channel vs per-tensor, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.dtypes import zero_point_range
from tabula.qmath import quantize_multiplier
from tabula.reference.ops import rescale

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _attrs(izp, ozp, m, s, out="int8") -> dict:
    return {"input_zp": izp, "output_zp": ozp, "multiplier": list(m), "shift": list(s), "output_dtype": out}


def _both(kernel_lib, x, a) -> np.ndarray:
    """Run C and the reference; assert they agree exactly; return the result."""
    want = rescale.run([x], a, strict=False)  # the C kernel is exact beyond TOSA's REQUIRE too
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
    from tabula.harness import host as kl

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
    from tabula.harness import host as kl

    x = np.zeros((2, 4), np.int32)
    with pytest.raises(kl.KernelError):
        kernel_lib.rescale(x, input_zp=0, output_zp=0, multiplier=[2**30] * 4, shift=[31, 31, 63, 31])


# --- the other dtype pairs: tabula_rescale_{s64_s16, s32_s16, s16_s16, s8_s32, s16_s32, s8_s16, s16_s8, s64_s8,
# s64_s32} (every signed pair TOSA 1.0 RESCALE has, with s8_s8 and s32_s8 above) ------------------------------
I48_MIN, I48_MAX = -(2**47), 2**47 - 1
VARIANTS = [("int64", "int16"), ("int32", "int16"), ("int16", "int16"), ("int8", "int32"), ("int16", "int32"), ("int8", "int16"),
            ("int16", "int8"), ("int64", "int8"), ("int64", "int32")]
_RANGE = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (I32_MIN, I32_MAX), "int64": (I48_MIN, I48_MAX)}


def _attrs_v(izp, ozp, m, s, out, scale32=True) -> dict:
    return {**_attrs(izp, ozp, m, s, out), "scale32": scale32}


def _both_v(kernel_lib, x, a) -> np.ndarray:
    """C (the kernel picked by the dtypes) == reference, exactly; returns the result."""
    want = rescale.run([x], a, strict=False)  # the C kernel is exact beyond TOSA's REQUIRE too
    got = kernel_lib.rescale(x, input_zp=a["input_zp"], output_zp=a["output_zp"], multiplier=a["multiplier"],
                             shift=a["shift"], output_dtype=a["output_dtype"])
    assert want.dtype == got.dtype == np.dtype(a["output_dtype"]) and want.shape == got.shape == x.shape
    np.testing.assert_array_equal(got, want)
    return want


def _exact(x, izp, ozp, m, s, out) -> np.ndarray:
    """Python-int oracle: clamp(floor((v*m + 2^(s-1)) / 2^s) + ozp)."""
    lo, hi = _RANGE[out]
    return np.array([min(hi, max(lo, ((int(v) - izp) * m + 2 ** (s - 1)) // 2**s + ozp)) for v in x.ravel()]).reshape(x.shape)


@pytest.mark.host
@pytest.mark.parametrize("din, dout", VARIANTS, ids=lambda d: d)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_variants_c_equals_reference_random(kernel_lib, rng, din, dout, per_channel):
    c = 5
    n = c if per_channel else 1
    scale32 = din != "int64"
    lo, hi = _RANGE[din]
    for _ in range(12):
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 5)), c)
        mag = 2 ** int(rng.integers(1, 48 if din == "int64" else np.iinfo(din).bits))
        x = rng.integers(max(-mag, lo), min(mag, hi), shape, endpoint=True).astype(din)
        izp = int(rng.integers(*zero_point_range(din), endpoint=True))  # TOSA 1.0: non-zero only for int8
        ozp = int(rng.integers(*zero_point_range(dout), endpoint=True))
        if scale32:
            m = rng.integers(0, 2**31 - 1, n, endpoint=True).tolist()
        else:
            m = rng.integers(0, 2**15 - 1, n, endpoint=True).tolist()
        s = rng.integers(2, 62, n, endpoint=True).tolist()
        got = _both_v(kernel_lib, x, _attrs_v(izp, ozp, m, s, dout, scale32))
        if not per_channel:
            np.testing.assert_array_equal(got, _exact(x, izp, ozp, m[0], s[0], dout))


@pytest.mark.host
@pytest.mark.parametrize("shift", [2, 15, 31, 47, 61, 62])
def test_s64_s16_int48_extremes(kernel_lib, shift):
    x = np.array([I48_MIN, I48_MIN + 1, -(2**31) - 1, -1, 0, 1, 2**31, I48_MAX - 1, I48_MAX], dtype=np.int64)
    for m in (2**15 - 1, 2**14, 1, 0):
        got = _both_v(kernel_lib, x, _attrs_v(0, 0, [m], [shift], "int16", False))
        np.testing.assert_array_equal(got, _exact(x, 0, 0, m, shift, "int16"))
    if shift == 62:  # (2^47 - 1)(2^15 - 1) / 2^62 = 1 - tiny -> 1;  -2^47 (2^15 - 1) / 2^62 -> -1
        got = _both_v(kernel_lib, x[[0, -1]], _attrs_v(0, 0, [2**15 - 1], [62], "int16", False))
        np.testing.assert_array_equal(got, [-1, 1])


@pytest.mark.host
@pytest.mark.parametrize("din, dout", VARIANTS, ids=lambda d: d)
def test_variants_saturate_and_round_ties(kernel_lib, din, dout):
    scale32 = din != "int64"
    m_half, s_half = (2**30, 31) if scale32 else (2**14, 15)  # x / 2, exactly half-way on odd x
    x = np.array([-5, -3, -1, 0, 1, 3, 5], dtype=din)
    got = _both_v(kernel_lib, x, _attrs_v(0, 0, [m_half], [s_half], dout, scale32))
    np.testing.assert_array_equal(got, [-2, -1, 0, 0, 1, 2, 3])  # half toward +infinity
    # saturation at both ends of the output: a scale of 2^12 (or 2^28 into int32) pushes the input ends
    # past the output range; the output zero points then pull a mid value onto each end exactly
    lo, hi = _RANGE[din]
    olo, ohi = _RANGE[dout]
    x = np.array([lo, lo + 1, -1, 0, 1, hi - 1, hi], dtype=din)
    m, s = (2**30, 2 if dout == "int32" else 10) if scale32 else (2**14, 2)
    got = _both_v(kernel_lib, x, _attrs_v(0, 0, [m], [s], dout, scale32))
    np.testing.assert_array_equal(got, _exact(x, 0, 0, m, s, dout))
    assert got[0] == olo and got[-1] == ohi and got[3] == 0


@pytest.mark.host
@pytest.mark.parametrize("din, dout", VARIANTS + [("int8", "int8"), ("int32", "int8")], ids=lambda d: d)
def test_zero_points_only_on_int8_sides(kernel_lib, din, dout):
    """TOSA 1.0 (signed types): input_zp may be non-zero only for an int8 input, output_zp only for an
    int8 output (then inside int8); the C refuses any other with TABULA_ERR_ARG."""
    from tabula.harness import host as kl

    x = np.array([-3, 0, 5], dtype=din)
    m, s = (2**30, 31) if din != "int64" else (2**14, 15)

    def run(izp, ozp):
        return kernel_lib.rescale(x, input_zp=izp, output_zp=ozp, multiplier=[m], shift=[s], output_dtype=dout)

    for side, dt in (("in", din), ("out", dout)):
        bad = (-129, 128) if dt == "int8" else (-1, 1, -128, 127, 32767)
        for zp in bad:
            with pytest.raises(kl.KernelError) as e:
                run(zp, 0) if side == "in" else run(0, zp)
            assert e.value.status == kl.TABULA_ERR_ARG
    izp = -128 if din == "int8" else 0
    ozp = 127 if dout == "int8" else 0
    np.testing.assert_array_equal(run(izp, ozp), _exact(x, izp, ozp, m, s, dout))


@pytest.mark.host
@pytest.mark.parametrize("din, dout", VARIANTS, ids=lambda d: d)
def test_variants_per_channel_vs_per_tensor(kernel_lib, rng, din, dout):
    c = 4
    scale32 = din != "int64"
    lo, hi = _RANGE[din]
    x = rng.integers(max(lo, -(2**40)), min(hi, 2**40), (3, 5, c), endpoint=True).astype(din)
    m = rng.integers(2**30 if scale32 else 2**14, 2**31 - 1 if scale32 else 2**15 - 1, c, endpoint=True).tolist()
    s = rng.integers(30, 50, c, endpoint=True).tolist() if din in ("int64", "int32") else rng.integers(20, 36, c).tolist()
    per_ch = _both_v(kernel_lib, x, _attrs_v(0, 0, m, s, dout, scale32))
    for ch in range(c):
        col = np.ascontiguousarray(x[..., ch])
        np.testing.assert_array_equal(per_ch[..., ch], _both_v(kernel_lib, col, _attrs_v(0, 0, [m[ch]], [s[ch]], dout, scale32)))


@pytest.mark.parametrize(
    "dtype, attrs, match",
    [
        ("int64", _attrs_v(0, 0, [2**14], [20], "int16", True), "scale32"),
        ("int64", _attrs_v(0, 0, [2**15], [20], "int16", False), "multiplier"),
        ("int64", _attrs_v(1, 0, [2**14], [20], "int16", False), "input_zp"),
        ("int16", _attrs_v(0, 0, [2**15], [20], "int16", False), "multiplier"),
        ("int16", _attrs_v(-32769, 0, [2**14], [20], "int16"), "input_zp"),
        ("int8", _attrs_v(0, 2**31, [2**14], [20], "int32"), "output_zp"),
        ("int8", _attrs_v(0, 0, [2**14], [20], "int64"), "output dtype"),
    ],
)
def test_variants_reference_rejects(dtype, attrs, match):
    with pytest.raises(ValueError, match=match):
        rescale.run([np.zeros((2, 4), dtype=dtype)], attrs)


def test_s64_reference_rejects_values_outside_int48():
    a = _attrs_v(0, 0, [2**14], [20], "int16", False)
    for v in (I48_MAX + 1, I48_MIN - 1):
        with pytest.raises(ValueError, match="int48"):
            rescale.run([np.array([0, v], np.int64)], a)


def test_scale32_false_on_narrow_inputs_is_apply_scale_16():
    x = np.array([-32768, -3, -1, 1, 3, 32767], np.int16)
    got = rescale.run([x], _attrs_v(0, 0, [2**14], [15], "int16", False))  # x / 2, ties up
    np.testing.assert_array_equal(got, [-16384, -1, 0, 1, 2, 16384])


@pytest.mark.host
@pytest.mark.parametrize(
    "din, dout, izp, ozp, m, s",
    [
        ("int64", "int16", 1, 0, 2**14, 20), ("int64", "int16", 0, 1, 2**14, 20), ("int64", "int16", 0, 0, 2**15, 20),
        ("int64", "int16", 0, 0, 2**14, 1), ("int64", "int16", 0, 0, -1, 20),
        ("int32", "int16", 1, 0, 2**30, 31), ("int32", "int16", 0, -32769, 2**30, 31),
        ("int16", "int16", 32768, 0, 2**30, 31), ("int16", "int16", 0, 0, 2**30, 63),
        ("int16", "int16", 1, 0, 2**30, 31), ("int16", "int16", 0, -1, 2**30, 31),  # int16: no zero point
        ("int8", "int32", -129, 0, 2**30, 31), ("int8", "int32", 0, 0, -1, 31), ("int8", "int32", 0, 5, 2**30, 31),
        ("int16", "int32", -32769, 0, 2**30, 31), ("int16", "int32", 0, 0, 2**30, 1), ("int16", "int32", 7, 0, 2**30, 31),
        ("int32", "int32", 0, 1, 2**30, 31), ("int32", "int32", 1, 0, 2**30, 31),
    ],
)
def test_variants_c_rejects(kernel_lib, din, dout, izp, ozp, m, s):
    from tabula.harness import host as kl

    x = np.zeros(8, dtype=din)
    out = np.full(8, 99, dtype=dout)
    ms, ss = np.full(8, m, np.int32), np.full(8, s, np.int32)
    fn = getattr(kernel_lib.lib, f"tabula_rescale_{kl._PTR[x.dtype][1]}_{kl._PTR[out.dtype][1]}")
    status = fn(x.ctypes.data_as(kl._PTR[x.dtype][0]), 8, 1, izp, ozp, ms.ctypes.data_as(kl._i32p),
                ss.ctypes.data_as(kl._i32p), 0, out.ctypes.data_as(kl._PTR[out.dtype][0]))
    assert status == kl.TABULA_ERR_ARG
    assert np.all(out == 99)  # nothing written


@pytest.mark.host
def test_s64_s16_c_rejects_values_outside_int48(kernel_lib):
    from tabula.harness import host as kl

    for v in (I48_MAX + 1, I48_MIN - 1, -(2**63), 2**63 - 1):
        with pytest.raises(kl.KernelError):
            kernel_lib.rescale(np.array([0, v], np.int64), input_zp=0, output_zp=0, multiplier=[2**14], shift=[20],
                               output_dtype="int16")


# --- the narrowing path (int32 / int48 -> int8 / int16: mixed precision's boundaries) and the fused CLAMP
# (tabula_rescale_clamp_<in>_<out>), on every target: Helium (4 channels per vector), the portable and the
# DSP builds.  Each case: C == reference (RESCALE, then CLAMP), tolerance 0. -----------------------------
from helpers import kernel_targets, run_kernel_cases  # noqa: E402

NARROW = [("int32", "int8"), ("int32", "int16"), ("int64", "int8"), ("int64", "int16")]


def _want(x, a, clamp=None) -> np.ndarray:
    y = rescale.run([x], a, strict=False)
    return y if clamp is None else np.clip(y, *clamp).astype(y.dtype)


def _ties(din, m, s, n, rng) -> np.ndarray:
    """``n`` values x with x * m exactly half-way between two multiples of 2^s (m = 2^j, j < s), both signs."""
    j = int(m).bit_length() - 1
    e = s - 1 - j  # x = (2k + 1) 2^e: x m = (2k + 1) 2^(s-1)
    lim = (2**31 if din == "int32" else 2**47) >> (e + 1)  # |2k + 1| 2^e inside the type
    k = rng.integers(-min(lim, 2**20), min(lim, 2**20) - 1, n, endpoint=True)
    return ((2 * k + 1) << e).astype(din)


def _narrow_cases(rng, din, dout, clamp: bool):
    """(label, call, want) cases: every shift 2..62 (61 channels: a channel tail of 1), the multiplier ends,
    ties, both saturation ends, output zero points at their ends, channel counts 1..9 and 64, random data."""
    scale32 = din == "int32"
    m_max = 2**31 - 1 if scale32 else 2**15 - 1
    lo, hi = _RANGE[din]
    olo, ohi = _RANGE[dout]
    zps = (-128, 127, 0) if dout == "int8" else (0,)
    cases = []

    def add(label, x, m, s, ozp, bounds=None):
        a = _attrs_v(0, ozp, m, s, dout, scale32)
        if clamp and bounds is None:
            b = sorted(int(v) for v in rng.integers(olo, ohi, 2, endpoint=True))
            bounds = (b[0], b[1])
        if not clamp:
            bounds = None
        cases.append((f"{din}->{dout} {label} clamp={bounds}",
                      lambda lib, x=x, a=a, b=bounds: lib.rescale(x, input_zp=0, output_zp=a["output_zp"],
                                                                  multiplier=a["multiplier"], shift=a["shift"],
                                                                  output_dtype=dout, clamp=b),
                      _want(x, a, bounds)))

    def values(shape, mag_bits=None):
        mag = 2 ** (mag_bits if mag_bits is not None else int(rng.integers(1, 48 if din == "int64" else 32)))
        x = rng.integers(max(-mag, lo), min(mag, hi), shape, endpoint=True)
        flat = x.reshape(-1)  # sprinkle the input's ends
        flat[rng.integers(0, flat.size, max(1, flat.size // 16))] = rng.choice([lo, hi, lo + 1, hi - 1, -1, 0, 1],
                                                                                  max(1, flat.size // 16))
        return x.astype(din)

    # every shift 2..62 per channel, multipliers random / the largest / 0, data of every magnitude
    shifts = list(range(2, 63))
    for mkind in ("random", "max", "zero", "pow2"):
        if mkind == "random":
            m = rng.integers(0, m_max, 61, endpoint=True).tolist()
        elif mkind == "max":
            m = [m_max] * 61
        elif mkind == "zero":
            m = [0] * 61
        else:
            m = [2 ** int(rng.integers(0, 31 if scale32 else 15)) for _ in range(61)]
        for bits in (8, 20, 31, None):
            add(f"shifts 2..62 m={mkind} bits={bits}", values((3, 61), bits), m, shifts, int(rng.choice(zps)))
    # per tensor, every shift, the multiplier ends; counts 0..9 and 37 (tails of the rows of 4)
    for s in range(2, 63):
        for m in (m_max, 1, int(rng.integers(0, m_max))):
            n = int(rng.choice([1, 2, 3, 4, 5, 7, 9, 37]))
            add(f"per tensor s={s} m={m} n={n}", values((n,)), [m], [s], int(rng.choice(zps)))
    add("per tensor empty", np.zeros((0,), din), [m_max], [31], 0)
    # ties (x m exactly at .5 of 2^s), per tensor and per channel, both signs: half toward +infinity
    for s in (2, 3, 16, 17, 31, 32, 33, 34, 47, 60):
        jmax = min(s - 1, 30 if scale32 else 14)
        jmin = max(0, s - 1 - (29 if scale32 else 45))  # x = (2k+1) 2^(s-1-j) must fit the input type
        mp = 2 ** int(rng.integers(jmin, jmax, endpoint=True))
        add(f"ties s={s} m={mp}", _ties(din, mp, s, 24, rng), [mp], [s], int(rng.choice(zps)))
    # saturation at both ends and the output zero point at its ends: a large and a small scale
    for ozp in zps:
        x = np.array([lo, lo + 1, -(2**20), -1, 0, 1, 2**20, hi - 1, hi] * 2, din)
        add(f"saturate ozp={ozp}", x, [m_max], [2 if scale32 else 18], ozp)
        add(f"saturate small ozp={ozp}", x, [m_max], [62], ozp)
    # per channel, channel counts 1..9 and 64 (a tail of 1..3 or none), realistic scales and raw ones
    for c in (1, 2, 3, 4, 5, 6, 7, 8, 9, 64):
        for kind in ("real", "raw"):
            rows = int(rng.integers(1, 6))
            if kind == "real":
                ms, ss = _params(rng, c) if scale32 else zip(*((int(rng.integers(2**14, 2**15)), int(rng.integers(15, 35)))
                                                               for _ in range(c)))
                ms, ss = list(ms), list(ss)
            else:
                ms = rng.integers(0, m_max, c, endpoint=True).tolist()
                ss = rng.integers(2, 62, c, endpoint=True).tolist()
            add(f"channels={c} {kind}", values((rows, c)), ms, ss, int(rng.choice(zps)))
    # int48 values outside int32 mixed into rows of 4 (the 64-bit way for those rows only)
    if din == "int64":
        x = rng.integers(-(2**31), 2**31 - 1, (16, 8), endpoint=True)
        x[rng.integers(0, 16, 6), rng.integers(0, 8, 6)] = rng.integers(lo, hi, 6, endpoint=True)
        add("int48 outside int32, per channel", x.astype(din), rng.integers(0, m_max, 8, endpoint=True).tolist(),
            rng.integers(20, 62, 8, endpoint=True).tolist(), int(rng.choice(zps)))
        add("int48 outside int32, per tensor", x.astype(din), [int(rng.integers(0, m_max))], [40], int(rng.choice(zps)))
    # the clamp bounds at the type's ends and a single value
    if clamp:
        x = values((4, 8), 20)
        ms = rng.integers(0, m_max, 8, endpoint=True).tolist()
        ss = rng.integers(20, 40, 8, endpoint=True).tolist()
        for b in ((olo, ohi), (0, ohi), (olo, olo), (ohi, ohi), (-3, -3), (0, 0)):
            add(f"bounds {b}", x, ms, ss, int(rng.choice(zps)), b)
    return cases


@pytest.mark.parametrize("target", kernel_targets("host", "m55", "m55-portable", "m4"))
@pytest.mark.parametrize("din, dout", NARROW, ids=lambda d: d)
@pytest.mark.parametrize("clamp", [False, True], ids=["rescale", "rescale_clamp"])
def test_narrowing_paths_equal_reference(kernels_on, rng, target, din, dout, clamp):
    run_kernel_cases(kernels_on(target), _narrow_cases(rng, din, dout, clamp))


@pytest.mark.host
@pytest.mark.parametrize("din, dout", NARROW, ids=lambda d: d)
def test_rescale_clamp_rejects(kernel_lib, din, dout):
    from tabula.harness import host as kl

    x = np.zeros(8, dtype=din)
    m, s = (2**30, 31) if din == "int32" else (2**14, 15)
    olo, ohi = _RANGE[dout]
    for b in ((olo - 1, 0), (0, ohi + 1), (5, 4)):
        with pytest.raises(kl.KernelError) as e:
            kernel_lib.rescale(x, input_zp=0, output_zp=0, multiplier=[m], shift=[s], output_dtype=dout, clamp=b)
        assert e.value.status == kl.TABULA_ERR_ARG
    if din == "int64":  # an element outside int48 stops the kernel, on the narrowing path too
        for v in (I48_MAX + 1, I48_MIN - 1):
            with pytest.raises(kl.KernelError):
                kernel_lib.rescale(np.array([0, 1, 2, v, 4], din), input_zp=0, output_zp=0, multiplier=[m], shift=[s],
                                   output_dtype=dout, clamp=(olo, ohi))
