"""AVG_POOL2D int8/int16: C == reference (tolerance 0); the reference against an independent float
oracle (mean over the valid taps, within 1 LSB) and an exact rational one (TOSA's reciprocal_scale
rounds ties away from zero at these magnitudes); padding excluded from the count; windows of
1..49 taps; zero points; saturation; argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import int8, kernel_targets, run_kernel_cases
from tabula.qmath import reciprocal_scale
from tabula.reference.ops import avg_pool2d

# name: (N, H, W, C, kernel, stride, pad [t,b,l,r])
CASES = {
    "2x2_s2": (1, 8, 8, 3, (2, 2), (2, 2), (0, 0, 0, 0)),
    "3x3_s2_pad1": (2, 9, 7, 4, (3, 3), (2, 2), (1, 1, 1, 1)),
    "3x3_s1_same": (1, 5, 6, 16, (3, 3), (1, 1), (1, 1, 1, 1)),
    "nonsquare_asym_pad": (1, 7, 10, 5, (2, 4), (1, 3), (1, 0, 3, 2)),
    "kernel_covers_all": (1, 3, 3, 2, (3, 3), (1, 1), (2, 2, 2, 2)),
    "global_7x7": (1, 7, 7, 8, (7, 7), (1, 1), (0, 0, 0, 0)),
    "1x1_s3": (1, 7, 7, 1, (1, 1), (3, 3), (0, 0, 0, 0)),
}
RANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


def _attrs(kernel, stride, pad, izp=0, ozp=0) -> dict:
    return {"kernel": list(kernel), "stride": list(stride), "pad": list(pad), "input_zp": izp, "output_zp": ozp}


def _float_oracle(x, a):
    """Mean of (x - input_zp) over the valid taps of each window, in float64, + output_zp (unrounded)."""
    kh, kw = a["kernel"]
    sy, sx = a["stride"]
    pt, pb, pl, pr = a["pad"]
    n, h, w, c = x.shape
    oh, ow = (h + pt + pb - kh) // sy + 1, (w + pl + pr - kw) // sx + 1
    out = np.empty((n, oh, ow, c))
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * sy - pt, ox * sx - pl
            win = x[:, max(y0, 0):min(y0 + kh, h), max(x0, 0):min(x0 + kw, w), :].astype(np.float64) - a["input_zp"]
            out[:, oy, ox, :] = win.mean(axis=(1, 2)) + a["output_zp"]
    return out


def _both(kernel_lib, x, a) -> np.ndarray:
    want = avg_pool2d.run([x], a)
    got = kernel_lib.avg_pool2d(x, kernel=a["kernel"], stride=a["stride"], pad=a["pad"], input_zp=a["input_zp"],
                                output_zp=a["output_zp"])
    assert got.dtype == want.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return want


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("name", CASES)
def test_c_equals_reference_and_float_mean(kernel_lib, rng, dtype, name):
    n, h, w, c, k, s, p = CASES[name]
    lo, hi = RANGE[dtype]
    zps = [(0, 0)] if dtype == "int16" else [(0, 0), (-128, 127), (37, -20)]
    for izp, ozp in zps:
        x = rng.integers(lo, hi, (n, h, w, c), endpoint=True).astype(dtype)
        a = _attrs(k, s, p, izp, ozp)
        got = _both(kernel_lib, x, a)
        exp = np.clip(_float_oracle(x, a), lo, hi)
        assert np.max(np.abs(got - exp)) <= 0.5 + 1e-6  # round to nearest: never more than half an LSB off


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_padding_is_not_counted(kernel_lib, dtype):
    # a constant input averages to itself everywhere, borders included: padding (as 0 or as zp) would
    # pull the border windows toward it
    value = 100 if dtype == "int8" else 30000
    x = np.full((1, 4, 5, 3), value, dtype=dtype)
    a = _attrs((3, 3), (1, 1), (2, 2, 2, 2))
    np.testing.assert_array_equal(_both(kernel_lib, x, a), np.full((1, 6, 7, 3), value, dtype=dtype))
    if dtype == "int8":  # and with a zero point: (100 - 50) averaged, + (-10)
        np.testing.assert_array_equal(_both(kernel_lib, x, _attrs((3, 3), (1, 1), (2, 2, 2, 2), 50, -10)),
                                      np.full((1, 6, 7, 3), 40, dtype=dtype))
    # a corner window of a 3x3 pad-2 pool sees exactly one element
    x = np.arange(20, dtype=dtype).reshape(1, 4, 5, 1)
    got = _both(kernel_lib, x, _attrs((3, 3), (1, 1), (2, 2, 2, 2)))
    assert got[0, 0, 0, 0] == 0 and got[0, -1, -1, 0] == 19 and got[0, 0, -1, 0] == 4


def _round_half_away(num: np.ndarray, den: int) -> np.ndarray:
    q = (2 * np.abs(num) + den) // (2 * den)
    return np.sign(num) * q


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_windows_of_1_to_49_taps(kernel_lib, rng, dtype):
    # one window covering the whole input, kh x kw for every kh, kw in 1..7: count = kh * kw.
    # TOSA's reciprocal_scale multiplier is slightly above 2^shift / count, so at these magnitudes the
    # result is the exact mean rounded half AWAY from zero (negative ties go down, not up).
    lo, hi = RANGE[dtype]
    seen = set()
    for kh in range(1, 8):
        for kw in range(1, 8):
            x = rng.integers(lo, hi, (3, kh, kw, 6), endpoint=True).astype(dtype)
            x[0] = lo  # ends of the range
            x[1] = hi
            got = _both(kernel_lib, x, _attrs((kh, kw), (1, 1), (0, 0, 0, 0)))
            acc = x.astype(np.int64).sum(axis=(1, 2))
            np.testing.assert_array_equal(got[:, 0, 0, :], _round_half_away(acc, kh * kw))
            seen.add(kh * kw)
    assert len(seen) == len({a * b for a in range(1, 8) for b in range(1, 8)})
    for count in range(1, 50):  # every divisor 1..49 (also those that are no kh*kw product here)
        x = rng.integers(lo, hi, (2, 1, count, 5), endpoint=True).astype(dtype)
        got = _both(kernel_lib, x, _attrs((1, count), (1, 1), (0, 0, 0, 0)))
        np.testing.assert_array_equal(got[:, 0, 0, :], _round_half_away(x.astype(np.int64).sum(axis=(1, 2)), count))


@pytest.mark.host
@pytest.mark.parametrize("count", [2, 4, 6, 8, 10, 48])
def test_ties_both_signs(kernel_lib, count):
    # sums of +-(k + 1/2) * count: positive ties go up, negative ties go down (away from zero)
    half = count // 2
    x = np.zeros((4, 1, count, 1), np.int16)
    x[0, 0, 0, 0], x[1, 0, 0, 0] = half, -half  # +-0.5
    x[2, 0, 0, 0], x[3, 0, 0, 0] = 3 * count + half, -(3 * count + half)  # +-3.5
    got = _both(kernel_lib, x, _attrs((1, count), (1, 1), (0, 0, 0, 0)))
    np.testing.assert_array_equal(got.ravel(), [1, -1, 4, -4])
    m, s = reciprocal_scale(count)
    assert m * count > 2**s  # the multiplier errs upward: that is what makes negative ties go down


@pytest.mark.host
def test_saturation_int8(kernel_lib):
    x = np.full((1, 2, 2, 2), 127, np.int8)
    x[..., 1] = -128
    got = _both(kernel_lib, x, _attrs((2, 2), (2, 2), (0, 0, 0, 0), -128, 127))  # 255 + 127 and 0 + 127
    np.testing.assert_array_equal(got.ravel(), [127, 127])
    got = _both(kernel_lib, x, _attrs((2, 2), (2, 2), (0, 0, 0, 0), 127, -128))  # 0 - 128 and -255 - 128
    np.testing.assert_array_equal(got.ravel(), [-128, -128])


@pytest.mark.parametrize("attrs, dtype, match", [
    (_attrs((2, 2), (1, 1), (2, 0, 0, 0)), "int8", "pad"),
    (_attrs((2, 2), (0, 1), (0, 0, 0, 0)), "int8", "stride"),
    (_attrs((2, 2), (1, 1), (0, 0, 0, 0), 1, 0), "int16", "zero points"),
    (_attrs((2, 2), (1, 1), (0, 0, 0, 0), 128, 0), "int8", "input_zp"),
])
def test_reference_rejects(attrs, dtype, match):
    with pytest.raises(ValueError, match=match):
        avg_pool2d.run([np.zeros((1, 4, 4, 1), dtype)], attrs)


def test_reference_rejects_int32_overflow():
    x = np.full((1, 256, 257, 1), -32768, np.int16)  # 65792 taps of -2^15: below -2^31
    with pytest.raises(ValueError, match="overflow"):
        avg_pool2d.run([x], _attrs((256, 257), (1, 1), (0, 0, 0, 0)))


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("field, value", [("pad_top", 2), ("pad_left", -1), ("dilation_y", 2), ("stride_x", 0),
                                          ("out_h", 9), ("kernel_h", 0), ("n", 0), ("izp", 128), ("ozp", -129),
                                          ("izp", 1), ("ozp", -1)])
def test_c_rejects(kernel_lib, dtype, field, value):
    import ctypes

    from tabula.harness import host as kl

    x = np.zeros((1, 4, 4, 2), dtype)
    out = np.zeros((1, 16, 16, 2), dtype)
    typ, sfx = kl._PTR[x.dtype]
    win = kl.KernelLib.window(x.shape, (3, 3), (2, 2), (1, 1), (1, 1), (0, 0, 0, 0))
    zp = {"izp": 0, "ozp": 0}
    fn = getattr(kernel_lib.lib, f"tabula_avg_pool2d_{sfx}")
    call = lambda: fn(ctypes.byref(win), x.ctypes.data_as(typ), zp["izp"], zp["ozp"], out.ctypes.data_as(typ))  # noqa: E731
    assert call() == kl.TABULA_OK
    if field in zp:
        zp[field] = value
    else:
        setattr(win, field, value)
    int8_zp_ok = dtype == "int8" and field in zp and abs(value) == 1  # only int16 needs zero points of 0
    assert call() == (kl.TABULA_OK if int8_zp_ok else kl.TABULA_ERR_ARG)


# Helium (int8, 4 channels per int32 vector; windows of 1..4 real taps take the shifted-accumulator
# path) and the portable path on the emulated M55, and the M4: channel tails, one channel, windows with
# one real tap, zero points at the int8 ends.
DEVICE_CASES = {
    "2x2_s2_c32": (1, 8, 8, 32, (2, 2), (2, 2), (0, 0, 0, 0), -4, 3),
    "3x3_pad1_c17": (1, 6, 5, 17, (3, 3), (1, 1), (1, 1, 1, 1), 127, -128),
    "one_tap_corners_c7": (1, 2, 2, 7, (3, 3), (1, 1), (2, 2, 2, 2), -128, 127),
    "1d_window_c64": (1, 1, 12, 64, (1, 3), (1, 1), (0, 0, 1, 1), 5, -7),
    "global_6x6_c3": (2, 6, 6, 3, (6, 6), (6, 6), (0, 0, 0, 0), 0, 0),
    "c1_s2": (1, 5, 5, 1, (3, 3), (2, 2), (1, 1, 1, 1), -1, 1),
}


@pytest.mark.parametrize("target", kernel_targets("m55", "m55-portable", "m4"))
def test_avg_pool2d_s8_on_device(kernels_on, rng, target):
    cases = []
    for name, (n, h, w, c, k, s, p, izp, ozp) in DEVICE_CASES.items():
        for edges in (False, True):
            x = int8(rng, (n, h, w, c), edges)
            a = {"kernel": list(k), "stride": list(s), "pad": list(p), "input_zp": izp, "output_zp": ozp}
            want = avg_pool2d.run([x], a)
            cases.append((f"{name} edges={edges}", lambda lib, x=x, k=k, s=s, p=p, izp=izp, ozp=ozp: lib.avg_pool2d(
                x, kernel=k, stride=s, pad=p, input_zp=izp, output_zp=ozp), want))
    run_kernel_cases(kernels_on(target), cases)
