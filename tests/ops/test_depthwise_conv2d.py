"""DEPTHWISE_CONV2D: C tabula_depthwise_conv2d_s8 / _s16 == reference (tolerance 0), reference == torch
conv2d(groups=C) (float64 of x - zp, exact at these magnitudes), padding acts as the input zero point,
int32 / int48 extremes, channel multipliers, errors; and every ISA path on every target (the end of this
file)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import (int8, kernel_targets, requant_block, requant_block16, requant_block_cross, run_kernel_cases,
                     weights8)

from tabula import requant
from tabula.harness import host as kl
from tabula.reference.ops import depthwise_conv2d

# name: (N, H, W, C, M, KH, KW, pad [t,b,l,r], stride, dilation, input_zp, weight_zp)
CASES = {
    "3x3_pad1_c64": (1, 16, 16, 64, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -7, 0),
    "tail_c13": (1, 7, 6, 13, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 12, 0),
    "c1": (1, 5, 9, 1, 1, 3, 2, (1, 1, 0, 1), (1, 1), (1, 1), 0, 0),
    "mult2": (1, 6, 6, 4, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0),
    "mult3_c5": (2, 5, 7, 5, 3, 2, 3, (0, 1, 1, 1), (1, 2), (1, 1), -100, 0),
    "mult1_cin1_cout4": (1, 6, 5, 1, 4, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 5, 0),
    "stride2_asym_pad": (1, 9, 11, 8, 1, 3, 3, (0, 1, 0, 1), (2, 2), (1, 1), 40, 0),
    "dilation": (1, 10, 9, 6, 1, 3, 3, (2, 2, 2, 2), (1, 1), (2, 2), -1, 0),
    "dilation_nonsquare": (2, 9, 11, 3, 2, 2, 3, (1, 0, 2, 1), (2, 1), (2, 3), 5, 0),
    "kernel_10x4": (1, 12, 6, 16, 1, 10, 4, (4, 5, 1, 2), (2, 1), (1, 1), 0, 0),
    "kernel_gt_input": (1, 3, 2, 4, 1, 5, 4, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0),
    "window_in_padding": (1, 2, 2, 3, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), -5, 0),
    "1x1": (1, 4, 5, 24, 1, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0),
    "zp_max": (1, 7, 6, 9, 1, 3, 3, (2, 2, 2, 2), (1, 1), (2, 2), 127, 0),
    "weight_zp": (1, 6, 6, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 11),
    "weight_zp_ends": (1, 5, 6, 4, 1, 2, 2, (1, 0, 0, 1), (1, 1), (1, 1), 127, -128),
    "wide_channels": (1, 3, 3, 300, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 17, 0),
}

# int16 x int8: (N, H, W, C, M, KH, KW, pad, stride, dilation, weight_zp); input_zp is 0
CASES_S16 = {
    "3x3_pad1_c64": (1, 16, 16, 64, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
    "tail_c13": (1, 7, 6, 13, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
    "mult3_c5": (2, 5, 7, 5, 3, 2, 3, (0, 1, 1, 1), (1, 2), (1, 1), 0),
    "stride_dilation": (1, 9, 11, 7, 2, 3, 2, (2, 1, 1, 2), (2, 1), (2, 3), 0),
    "window_in_padding": (1, 2, 2, 3, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 0),
    "weight_zp": (1, 6, 6, 3, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128),
    "kernel_17x17": (1, 17, 17, 4, 1, 17, 17, (8, 8, 8, 8), (1, 1), (1, 1), 0),  # > 256 taps
}


def _attrs(pad, stride, dilation, izp, wzp) -> dict:
    return {"pad": list(pad), "stride": list(stride), "dilation": list(dilation), "input_zp": izp, "weight_zp": wzp}


def _random(rng, case):
    n, h, w, c, m, kh, kw, pad, stride, dil, izp, wzp = case
    x = rng.integers(-128, 127, (n, h, w, c), endpoint=True, dtype=np.int8)
    lo = -127 if wzp == 0 else -128  # symmetric weights live in [-127, 127]
    wt = rng.integers(lo, 127, (kh, kw, c, m), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**20), 2**20, c * m, dtype=np.int32)
    return x, wt, b, _attrs(pad, stride, dil, izp, wzp)


def _random_s16(rng, case):
    n, h, w, c, m, kh, kw, pad, stride, dil, wzp = case
    x = rng.integers(-32768, 32767, (n, h, w, c), endpoint=True, dtype=np.int16)
    wt = rng.integers(-128 if wzp else -127, 127, (kh, kw, c, m), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**40), 2**40, c * m, dtype=np.int64)
    return x, wt, b, _attrs(pad, stride, dil, 0, wzp)


def _c(kernel_lib, x, w, b, a):
    return kernel_lib.depthwise_conv2d(x, w, b, pad=a["pad"], stride=a["stride"], dilation=a["dilation"],
                                       input_zp=a["input_zp"], weight_zp=a["weight_zp"])


def _torch(x, w, b, a) -> np.ndarray:
    """float64 torch conv2d(groups=C) of (x - input_zp) with PyTorch's [C*M, 1, KH, KW] weights."""
    pt, pb, pl, pr = a["pad"]
    c, m = w.shape[2], w.shape[3]
    xf = torch.from_numpy(x.astype(np.float64) - a["input_zp"]).permute(0, 3, 1, 2)  # NCHW
    xf = F.pad(xf, (pl, pr, pt, pb))  # zeros == the input zero point after subtracting it
    wf = torch.from_numpy(w.astype(np.float64) - a["weight_zp"]).permute(2, 3, 0, 1).reshape(c * m, 1, *w.shape[:2])
    bf = None if b is None else torch.from_numpy(b.astype(np.float64))
    return F.conv2d(xf, wf, bf, stride=a["stride"], dilation=a["dilation"], groups=c).permute(0, 2, 3, 1).numpy()


@pytest.mark.host
@pytest.mark.parametrize("name", CASES)
def test_c_equals_reference(kernel_lib, rng, name):
    x, w, b, a = _random(rng, CASES[name])
    want = depthwise_conv2d.run([x, w, b], a)
    got = _c(kernel_lib, x, w, b, a)
    assert got.dtype == np.int32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # bias == NULL in C is a zero bias
    np.testing.assert_array_equal(_c(kernel_lib, x, w, None, a), want - b)


@pytest.mark.parametrize("name", CASES)
def test_reference_equals_torch(rng, name):
    x, w, b, a = _random(rng, CASES[name])
    got = depthwise_conv2d.run([x, w, b], a)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.astype(np.float64), _torch(x, w, b, a))


def test_output_channel_numbering_is_c_times_m_plus_m():
    # one input channel lit at a time: only its M outputs c*M .. c*M+M-1 move, each by its own weight
    c, m = 3, 2
    w = np.arange(1, c * m + 1, dtype=np.int8).reshape(1, 1, c, m)
    a = _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0)
    for ch in range(c):
        x = np.zeros((1, 1, 1, c), np.int8)
        x[..., ch] = 2
        got = depthwise_conv2d.run([x, w, np.zeros(c * m, np.int32)], a).reshape(-1)
        want = np.zeros(c * m, np.int32)
        want[ch * m : ch * m + m] = 2 * w[0, 0, ch]
        np.testing.assert_array_equal(got, want)


@pytest.mark.host
@pytest.mark.parametrize("name", ["3x3_pad1_c64", "mult3_c5", "dilation_nonsquare", "zp_max", "weight_zp_ends",
                                  "window_in_padding"])
def test_padding_acts_as_input_zero_point(kernel_lib, rng, name):
    x, w, b, a = _random(rng, CASES[name])
    pt, pb, pl, pr = a["pad"]
    xpad = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=a["input_zp"])
    want = _c(kernel_lib, xpad, w, b, {**a, "pad": [0, 0, 0, 0]})  # explicit zp padding, no kernel padding
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), want)
    np.testing.assert_array_equal(depthwise_conv2d.run([x, w, b], a), want)
    # an input that is all zero point gives exactly the bias everywhere, border included
    xz = np.full_like(x, a["input_zp"])
    np.testing.assert_array_equal(_c(kernel_lib, xz, w, b, a), np.broadcast_to(b, want.shape))


@pytest.mark.host
@pytest.mark.parametrize(
    "xv, izp, wv, wzp",
    [(-128, 127, -128, 127), (-128, 127, 127, -128), (-128, 127, -127, 0), (127, -128, -127, 0)],
    ids=["max_general", "min_general", "max_symmetric", "min_symmetric"],
)
def test_int32_accumulator_extremes(kernel_lib, xv, izp, wv, wzp):
    # every tap is (x - zx)(w - zw) = +-255*255 or +-255*127 over a 9x9 window; the bias brings the
    # exact sum to INT32_MAX or INT32_MIN (bias + the first taps alone would not fit)
    c, m = 11, 2
    x = np.full((1, 9, 9, c), xv, dtype=np.int8)
    w = np.full((9, 9, c, m), wv, dtype=np.int8)
    a = _attrs((0, 0, 0, 0), (1, 1), (1, 1), izp, wzp)
    total = (xv - izp) * (wv - wzp) * 81
    target = 2**31 - 1 if total > 0 else -(2**31)
    b = np.full(c * m, target - total, dtype=np.int64)
    assert np.all((b >= -(2**31)) & (b < 2**31))
    b = b.astype(np.int32)
    want = np.full((1, 1, 1, c * m), target, dtype=np.int32)
    np.testing.assert_array_equal(depthwise_conv2d.run([x, w, b], a), want)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), want)


def test_reference_rejects_overflow_and_bad_attrs():
    x = np.full((1, 1, 1, 4), -128, dtype=np.int8)
    w = np.full((1, 1, 4, 1), -127, dtype=np.int8)  # (x - zp) * w = +255*127 per tap
    b = np.full(4, 2**31 - 1, dtype=np.int32)
    with pytest.raises(ValueError, match="overflow"):
        depthwise_conv2d.run([x, w, b], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 127, 0))
    z = np.zeros(4, np.int32)
    with pytest.raises(ValueError, match="input_zp"):
        depthwise_conv2d.run([x, w, z], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 128, 0))
    with pytest.raises(ValueError, match="stride"):
        depthwise_conv2d.run([x, w, z], _attrs((0, 0, 0, 0), (0, 1), (1, 1), 0, 0))
    with pytest.raises(ValueError, match="bias shape"):
        depthwise_conv2d.run([x, w, np.zeros(3, np.int32)], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0))
    with pytest.raises(ValueError, match="mismatch"):  # C of x and w differ
        depthwise_conv2d.run([x, np.zeros((1, 1, 2, 2), np.int8), z], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0))
    with pytest.raises(ValueError, match="empty output"):
        depthwise_conv2d.run([x, np.zeros((3, 1, 4, 1), np.int8), z], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0))
    with pytest.raises(ValueError, match="dtypes"):
        depthwise_conv2d.run([x, w, np.zeros(4, np.int64)], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0))


def _raw_call(kernel_lib, win, mult, izp, wzp, wide=False):
    """Call the kernel on buffers sized for multiplier 1 (a rejected call reads and writes nothing)."""
    x = np.zeros((1, 4, 4, 2), np.int16 if wide else np.int8)
    w = np.zeros((3, 3, 2), np.int8)
    out = np.zeros((1, 2, 2, 2), np.int64 if wide else np.int32)
    if wide:
        return kernel_lib.lib.tabula_depthwise_conv2d_s16(ctypes.byref(win), mult, x.ctypes.data_as(kl._i16p),
                                                          w.ctypes.data_as(kl._i8p), wzp, None, None, out.ctypes.data_as(kl._i64p))
    return kernel_lib.lib.tabula_depthwise_conv2d_s8(ctypes.byref(win), mult, x.ctypes.data_as(kl._i8p), izp,
                                                     w.ctypes.data_as(kl._i8p), wzp, None, None, out.ctypes.data_as(kl._i32p))


@pytest.mark.host
@pytest.mark.parametrize("wide", [False, True], ids=["s8", "s16"])
@pytest.mark.parametrize(
    "field, value",
    [("stride_y", 0), ("dilation_x", 0), ("pad_top", -1), ("pad_left", -1), ("kernel_w", 0), ("c", 0), ("out_h", 0),
     ("n", 0), ("multiplier", 0), ("multiplier", 2**30), ("weight_zp", 128), ("weight_zp", -129)]
    + [("input_zp", 128), ("input_zp", -129)],
)
def test_c_rejects_bad_arguments(kernel_lib, wide, field, value):
    if wide and field == "input_zp":
        pytest.skip("tabula_depthwise_conv2d_s16 has no input zero point")
    win = kl.KernelLib.window((1, 4, 4, 2), (2, 2), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0))
    args = {"multiplier": 1, "weight_zp": 0, "input_zp": 0}
    assert _raw_call(kernel_lib, win, 1, 0, 0, wide) == kl.TABULA_OK
    if field in args:
        args[field] = value
    else:
        setattr(win, field, value)
    assert _raw_call(kernel_lib, win, args["multiplier"], args["input_zp"], args["weight_zp"], wide) == kl.TABULA_ERR_ARG


# --- int16 x int8 -> int48 (tabula_depthwise_conv2d_s16) -----------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("name", CASES_S16)
def test_s16_c_equals_reference_equals_torch(kernel_lib, rng, name):
    x, w, b, a = _random_s16(rng, CASES_S16[name])
    want = depthwise_conv2d.run([x, w, b], a)
    assert want.dtype == np.int64
    got = _c(kernel_lib, x, w, b, a)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, None, a), want - b)
    # float64 oracle: every partial sum stays below 2^53, so the float conv is exact
    np.testing.assert_array_equal((want - b).astype(np.float64), _torch(x, w, None, a))


@pytest.mark.host
@pytest.mark.parametrize("sign", [1, -1])
def test_s16_int48_extremes(kernel_lib, sign):
    # taps of -32768 * -+127 over 16x16 windows plus a bias landing exactly on the int48 ends; an
    # int32 (or wrapped 48-bit) accumulator would be visibly wrong
    c = 10
    x = np.full((1, 16, 16, c), -32768, dtype=np.int16)
    w = np.full((16, 16, c, 1), -127 * sign, dtype=np.int8)
    a = _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0)
    total = -32768 * -127 * sign * 256
    target = 2**47 - 1 if sign > 0 else -(2**47)
    b = np.full(c, target - total, dtype=np.int64)
    want = np.full((1, 1, 1, c), target, dtype=np.int64)
    np.testing.assert_array_equal(depthwise_conv2d.run([x, w, b], a), want)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), want)
    with pytest.raises(ValueError, match="int48 accumulator overflow"):
        depthwise_conv2d.run([x, w, b + sign], a)


def test_s16_reference_rejects():
    x = np.zeros((1, 2, 2, 1), np.int16)
    w = np.zeros((1, 1, 1, 1), np.int8)
    with pytest.raises(ValueError, match="input_zp"):
        depthwise_conv2d.run([x, w, np.zeros(1, np.int64)], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 3, 0))
    with pytest.raises(ValueError, match="dtypes"):
        depthwise_conv2d.run([x, w, np.zeros(1, np.int32)], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0))


# --- the official TOSA reference model (tosa-tools) ------------------------------------------------------
def _int8_graph(x, w, b, a, want):
    from tabula.ir import Graph, Op, Tensor

    g = Graph(inputs=["x"], outputs=["y"])
    g.add_tensor(Tensor("x", x.shape, "int8"))
    g.add_tensor(Tensor("w", w.shape, "int8"), w)
    g.add_tensor(Tensor("b", b.shape, "int32"), b)
    g.add_tensor(Tensor("y", want.shape, "int32"))
    g.add_op(Op("DEPTHWISE_CONV2D", ["x", "w", "b"], ["y"], a))
    return g


@pytest.mark.tosa
@pytest.mark.parametrize("name", ["3x3_pad1_c64", "mult3_c5", "stride2_asym_pad", "zp_max", "weight_zp_ends",
                                  "window_in_padding", "kernel_10x4", "dilation", "mult1_cin1_cout4"])
def test_reference_equals_tosa_int8(rng, name):
    """Weights [KH, KW, C, M], output channel c*M + m, zero points, padding, stride, dilation: as TOSA
    1.0 computes them (kernel_10x4's floor-divided rows: the serializer drops the unread padding row)."""
    from tabula import tosa

    x, w, b, a = _random(rng, CASES[name])
    want = depthwise_conv2d.run([x, w, b], a)
    np.testing.assert_array_equal(tosa.run_graph(_int8_graph(x, w, b, a, want), [x])[0], want)


@pytest.mark.tosa
def test_tosa_serializer_slices_off_unread_input_rows(rng):
    """Stride 2 with floor division: the last input row is read by no window, more than the bottom
    padding can absorb; the serializer slices it off (TOSA's exact-division ERROR_IF) and TOSA computes
    what we compute."""
    from tabula import tosa

    x, w, b, a = _random(rng, CASES["dilation_nonsquare"])
    want = depthwise_conv2d.run([x, w, b], a)
    assert np.abs(want).max() > 100
    np.testing.assert_array_equal(tosa.run_graph(_int8_graph(x, w, b, a, want), [x])[0], want)


@pytest.mark.tosa
@pytest.mark.parametrize("name", ["3x3_pad1_c64", "mult3_c5", "window_in_padding", "weight_zp"])
def test_reference_equals_tosa_int16(rng, name):
    """int16 x int8 -> int48; the reference model's Python binding returns no INT48 tensor, so the
    result is read through a RESCALE to int16 by 2^-20 (apply_scale_16: multiplier 2^14, shift 34)."""
    from tabula import tosa
    from tabula.ir import Graph, Op, Tensor
    from tabula.reference.ops import rescale

    x, w, b, a = _random_s16(rng, CASES_S16[name])
    acc = depthwise_conv2d.run([x, w, b], a)
    r = {"input_zp": 0, "output_zp": 0, "multiplier": [2**14], "shift": [34], "scale32": False}
    want = rescale.run([acc], {**r, "output_dtype": "int16"})
    assert np.abs(want).max() > 1000  # the comparison sees real values, not a saturated or zero output
    g = Graph(inputs=["x"], outputs=["y"])
    g.add_tensor(Tensor("x", x.shape, "int16"))
    g.add_tensor(Tensor("w", w.shape, "int8"), w)
    g.add_tensor(Tensor("b", b.shape, "int48"), b)
    g.add_tensor(Tensor("acc", acc.shape, "int48"))
    g.add_tensor(Tensor("y", acc.shape, "int16"))
    g.add_op(Op("DEPTHWISE_CONV2D", ["x", "w", "b"], ["acc"], a))
    g.add_op(Op("RESCALE", ["acc"], ["y"], r))
    np.testing.assert_array_equal(tosa.run_graph(g, [x])[0], want)


# ---- every path on every target ---------------------------------------------------------------------
# tabula_depthwise_conv2d_s8 / _s16 with and without the fused requantization on the host and the
# emulated cores (tests/helpers.KERNEL_TARGETS), bit-exact with the reference then RESCALE + CLAMP.
# Helium: 8 channels per step (channel tails 1-15), multiplier 3 and 2 (gathers), 1-pixel maps, 1
# channel, 9 x 2000 B taps, a weight zero point (portable); DSP: 4 channels per step over the listed
# real taps (tails 1-7), clipped windows of every shape, windows wholly in the padding, 256 taps (the
# limit) and 272 (portable), multiplier 2 and a weight zero point (portable).
# (N, H, W, C, M, KH, KW, pad, stride, dilation, input_zp, weight_zp, block, edge inputs)
PATH_CASES = [
    (1, 8, 8, 64, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 0, "random", False),
    *[(1, 4, 3, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 7, 0, "random", False) for c in range(1, 16)],
    (1, 5, 5, 40, 1, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), -128, 0, "edges", False),
    (1, 7, 7, 5, 3, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), 127, 0, "random", False),          # multiplier 3
    (1, 1, 1, 19, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges", False),         # 1-pixel map
    (1, 6, 6, 1, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "random", False),          # 1 channel
    (1, 3, 3, 2000, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "random", False),         # 9 x 2000 B taps
    (2, 8, 6, 9, 2, 2, 3, (1, 0, 2, 1), (1, 2), (2, 2), -3, 5, "random", False),           # weight zp, dilation
    (1, 2, 2, 11, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random", False),           # padding-only pixels
    *[(1, 4, 5, c, 1, 5, 3, (2, 2, 1, 1), (1, 1), (1, 1), 13 * c - 50, 0, "extremes", False) for c in range(1, 8)],
    (1, 5, 5, 12, 1, 3, 3, (1, 1, 1, 1), (2, 2), (2, 2), -128, 0, "extremes", True),
    (1, 1, 1, 9, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "extremes", True),         # 1-pixel map
    (2, 2, 2, 6, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "extremes", False),          # padding-only pixels
    (1, 3, 2, 8, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), -1, 0, "extremes", False),         # windows wholly in the padding
    (1, 16, 16, 4, 1, 16, 16, (7, 8, 7, 8), (1, 1), (1, 1), 5, 0, "extremes", False),      # 256 taps: the DSP limit
    (1, 17, 16, 4, 1, 17, 16, (8, 8, 7, 8), (4, 4), (1, 1), 5, 0, "extremes", False),      # 272 taps: portable there
    (1, 4, 4, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "extremes", False),          # multiplier 2
    (1, 4, 4, 8, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, -5, "extremes", False),         # weight zp
    # Helium int8, every shift >= 33 (tabula_dw_mve16): 16-channel blocks with tails 1-15 and 17, 3x3 and
    # (k,1) / (1,k) lines, 1-pixel maps, padding-only windows, stride and dilation, zero points at the
    # ends with inputs at the ends (saturating outputs)
    *[(1, 4, 3, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 11 * (c % 23) - 128, 0, "ties", False) for c in (*range(1, 18), 32, 40)],
    *[(1, 6, 5, c, 1, kh, kw, (1, 1, 2, 0), (1, 1), (1, 1), -128, 0, "ties", True)
      for c in (8, 16, 24, 40, 13) for kh, kw in ((3, 1), (1, 3), (5, 1), (1, 1))],
    (1, 1, 1, 16, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "ties", True),            # 1-pixel map
    (1, 1, 1, 8, 1, 3, 1, (1, 1, 0, 0), (1, 1), (1, 1), -128, 0, "ties", True),            # 1-pixel map, line
    (1, 2, 2, 16, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "ties", False),             # padding-only pixels
    (1, 3, 2, 24, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), -1, 0, "ties", True),             # windows in the padding
    (2, 9, 8, 32, 1, 3, 3, (1, 1, 1, 1), (2, 2), (2, 2), 127, 0, "ties", True),            # stride, dilation
    (1, 9, 10, 16, 1, 3, 1, (0, 2, 0, 0), (2, 1), (3, 1), -128, 0, "ties", False),         # line, stride, dilation
    (1, 8, 8, 64, 1, 3, 3, (0, 0, 0, 0), (1, 1), (1, 1), 100, 0, "ties", True),            # interior only
    # a clamp inside the int8 range with every shift >= 33 (the DSP blocks' general epilogue, not SSAT)
    (1, 5, 4, 12, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -7, 0, "ties_relu", True),
    (1, 4, 4, 7, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 20, 0, "ties_relu", False),
]
# int16 x int8 (a16w8): channel tails, clipped windows with stride and dilation, windows in the padding,
# 256 real taps of (-32768)(-128) (a tap sum of 2^30), multiplier 2 and a weight zero point (portable)
# (N, H, W, C, M, KH, KW, pad, stride, dilation, weight_zp)
S16_PATH_CASES = [
    *[(1, 4, 5, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0) for c in (1, 4, 5, 7, 8)],
    (2, 5, 5, 12, 1, 3, 3, (2, 1, 0, 3), (2, 2), (2, 1), 0),
    (1, 3, 2, 8, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), 0),
    (1, 16, 16, 5, 1, 16, 16, (0, 0, 0, 0), (1, 1), (1, 1), 0),
    (1, 4, 4, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
    (1, 4, 4, 8, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -4),
]


def _requant_cases(rng, label, acc, call, kind, wide=False):
    block = requant_block16(rng, acc) if wide else requant_block(rng, acc, kind)
    return [(f"{label} acc", lambda lib: call(lib, None), acc),
            (f"{label} requant", lambda lib: call(lib, block), requant.reference(acc, block, wide))]


@pytest.mark.parametrize("target", kernel_targets())
def test_depthwise_conv2d_s8_on_every_target(kernels_on, rng, target):
    cases = []
    for case in PATH_CASES:
        n, h, w, c, m, kh, kw, pad, stride, dil, izp, wzp, kind, edges = case
        x, wt = int8(rng, (n, h, w, c), edges), weights8(rng, (kh, kw, c, m))
        b = rng.integers(-(2**14), 2**14, c * m, dtype=np.int32)
        a = _attrs(pad, stride, dil, izp, wzp)
        call = lambda lib, rq, x=x, wt=wt, b=b, a=a: lib.depthwise_conv2d(x, wt, b, **a, requant=rq)  # noqa: E731
        cases += _requant_cases(rng, str(case), depthwise_conv2d.run([x, wt, b], a), call, kind)
    run_kernel_cases(kernels_on(target), cases)


@pytest.mark.parametrize("target", kernel_targets())
def test_depthwise_conv2d_s16_on_every_target(kernels_on, rng, target):
    cases = []
    for case in S16_PATH_CASES:
        n, h, w, c, m, kh, kw, pad, stride, dil, wzp = case
        x = rng.integers(-32768, 32767, (n, h, w, c), endpoint=True, dtype=np.int16)
        wt = weights8(rng, (kh, kw, c, m))
        if kh * kw == 256:   # every product at its largest, +2^22: an interior tap sum of 2^30
            x[:] = -32768
            wt[:] = -128
        b = rng.integers(-(2**40), 2**40, c * m, dtype=np.int64)
        a = _attrs(pad, stride, dil, 0, wzp)
        call = lambda lib, rq, x=x, wt=wt, b=b, a=a: lib.depthwise_conv2d(x, wt, b, **a, requant=rq)  # noqa: E731
        cases += _requant_cases(rng, str(case), depthwise_conv2d.run([x, wt, b], a), call, None, wide=True)
    run_kernel_cases(kernels_on(target), cases)


# int16 x int8 with biases within 2^30: Helium's vector int48 epilogue (8 channels as two vectors of exact
# int32 sums) -- channel tails 1-7 and 9-15, clipped windows with stride and dilation, windows in the
# padding, multiplier 2 (the gathered input), 256 real taps of (-32768)(-128) with biases at -2^30 and
# 2^30 - 1 (the int32 ends), inputs at the int16 ends, outputs saturating and clamped at 0; next to the
# per-channel fallback: a bias of 2^30 (the whole call), a shift of 16 or 47.
# (N, H, W, C, M, KH, KW, pad, stride, dilation, int16-end inputs, out_min, bias override, shifts)
S16_VEC_CASES = [
    *[(1, 4, 5, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), c % 2 == 1, -32768, None, None) for c in (1, 3, 8, 13, 64)],
    (2, 5, 5, 12, 1, 3, 3, (2, 1, 0, 3), (2, 2), (2, 1), True, 0, None, None),
    (1, 3, 2, 8, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), False, -32768, None, None),
    (1, 4, 4, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True, -32768, None, None),
    (1, 16, 16, 4, 1, 16, 16, (0, 0, 0, 0), (1, 1), (1, 1), True, -32768, "ends", None),
    (1, 4, 4, 8, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True, -32768, "2^30", None),
    (1, 4, 4, 9, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), False, 0, None, {4: 16}),
    (1, 4, 4, 9, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), False, -32768, None, {8: 47}),
]


@pytest.mark.parametrize("target", kernel_targets())
def test_depthwise_conv2d_s16_vector_epilogue_on_every_target(kernels_on, rng, target):
    cases, outs = [], []
    for case in S16_VEC_CASES:
        n, h, w, c, m, kh, kw, pad, stride, dil, ends, lo, bias, shifts = case
        if ends:
            x = rng.choice(np.array([-32768, 32767], np.int16), (n, h, w, c))
        else:
            x = rng.integers(-32768, 32767, (n, h, w, c), endpoint=True, dtype=np.int16)
        wt = weights8(rng, (kh, kw, c, m))
        b = rng.integers(-(2**20), 2**20, c * m, dtype=np.int64)
        if bias == "ends":   # tap sums of +-2^30 (every product +-2^22) on biases at int32's reach
            x[:] = -32768
            wt[..., 0::2, :] = -128
            wt[..., 1::2, :] = 127
            b[0::2], b[1::2] = 2**30 - 1, -(2**30)
        elif bias == "2^30":
            b[3] = 2**30
        a = _attrs(pad, stride, dil, 0, 0)
        acc = depthwise_conv2d.run([x, wt, b], a)
        block = requant_block16(rng, acc, lo, shifts)
        want = requant.reference(acc, block, True)
        outs.append(want)
        cases += [(f"{case} acc", lambda lib, x=x, wt=wt, b=b, a=a: lib.depthwise_conv2d(x, wt, b, **a, requant=None),
                   acc),
                  (f"{case} requant", lambda lib, x=x, wt=wt, b=b, a=a, r=block: lib.depthwise_conv2d(
                      x, wt, b, **a, requant=r), want)]
    run_kernel_cases(kernels_on(target), cases)
    flat = np.concatenate([o.reshape(-1) for o in outs])
    assert (flat == 32767).any() and (flat == -32768).any() and ((flat > -32768) & (flat < 32767)).mean() > 0.5


# int16 x int8 requantized (tabula_depthwise_conv2d_s16 -> int16, _s16_s8 -> int8) on Helium's 16-channel
# blocks (tabula_dw_mve16 with int16 input: multiplier 1, weight_zp 0, 3x3 or (k,1) / (1,k), every shift in
# [17, 46], every bias in [-2^30, 2^30), at least a quarter of the map interior; _dw16_taken): channel
# tails 1-9, 15-17, 24 and 40 (predicated blocks of 1-15 channels, blocks of 8 and 16 with border pixels
# and interior runs), stride, asymmetric padding, dilation, lines, 2 images, inputs at the int16 ends
# (outputs saturating at both ends of int16 / int8), a clamp at 0, exact ties (multiplier 2^14, shifts
# 17-19, small accumulators), int8 output zero points (_s16_s8), biases at -2^30 and 2^30 - 1 under tap
# sums of +-9 * 2^22; next to the fallbacks: a bias of 2^30, a shift of 16 or 47 (the whole call), a map
# with one interior pixel of nine (tabula_dw_fast).
# (N, H, W, C, KH, KW, pad, stride, dilation, inputs, block, out dtype)
S16_BLOCK_CASES = [
    *[(1, 6, 7, c, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "random", "random", "int16")
      for c in (1, 2, 7, 8, 9, 15, 16, 17, 24, 40)],
    *[(1, 9, 8, c, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), "ends", "random", "int16") for c in (7, 8, 16, 24)],
    (1, 7, 6, 16, 3, 3, (0, 2, 1, 0), (1, 1), (1, 1), "random", "random", "int16"),      # asymmetric padding
    (2, 8, 9, 32, 3, 3, (2, 0, 0, 1), (2, 1), (1, 1), "ends", "random", "int16"),        # 2 images, stride 2 x 1
    (1, 10, 10, 16, 3, 3, (1, 1, 1, 1), (1, 1), (2, 2), "random", "random", "int16"),    # dilation
    *[(1, 6, 7, c, kh, kw, (1, 1, 2, 0), (1, 1), (1, 1), "ends", "random", "int16")
      for c in (8, 16, 13) for kh, kw in ((3, 1), (1, 3), (5, 1))],
    (1, 9, 10, 16, 3, 1, (0, 2, 0, 0), (2, 1), (3, 1), "random", "random", "int16"),     # line, stride, dilation
    (1, 6, 6, 24, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "ends", "relu", "int16"),          # clamp at 0
    *[(1, 6, 6, c, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "small", "ties", "int16") for c in (8, 9, 16)],
    (1, 6, 6, 16, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "ends", "bias_ends", "int16"),     # int32's ends
    (1, 6, 6, 16, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "ends", "bias_2^30", "int16"),     # fallback
    (1, 6, 6, 16, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "random", "shift16", "int16"),     # fallback
    (1, 6, 6, 17, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "random", "shift47", "int16"),     # fallback
    (1, 3, 3, 24, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "random", "random", "int16"),      # 1 interior pixel of 9
    *[(1, 6, 7, c, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "random", "random", "int8") for c in (1, 7, 8, 16, 17, 24)],
    (1, 9, 8, 16, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), "ends", "random", "int8"),
    (1, 7, 6, 24, 3, 3, (0, 2, 1, 0), (1, 1), (1, 1), "ends", "random", "int8"),
    *[(1, 6, 6, c, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "small", "ties", "int8") for c in (9, 16)],
    (1, 6, 7, 16, 3, 1, (1, 1, 0, 0), (1, 1), (1, 1), "random", "random", "int8"),
    (1, 6, 6, 16, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), "random", "shift47", "int8"),      # fallback
]


def _dw16_taken(case, block, b) -> bool:
    """Whether a S16_BLOCK_CASES case takes tabula_dw_mve16 (int16 input): the conditions of
    tabula_dw_body and tabula_dw16_worth."""
    n, h, w, c, kh, kw, pad, stride, dil, *_ = case
    r = requant.unpack(block)

    def inside(size, k, s, d, p0, p1):   # (interior outputs, outputs) along one axis
        out = (size + p0 + p1 - (k - 1) * d - 1) // s + 1
        return sum(1 for o in range(out) if o * s - p0 >= 0 and o * s - p0 + (k - 1) * d < size), out

    (iy, oy), (ix, ox) = inside(h, kh, stride[0], dil[0], pad[0], pad[1]), inside(w, kw, stride[1], dil[1], *pad[2:])
    return (((kh, kw) == (3, 3) or (min(kh, kw) == 1 and kh * kw <= 64)) and all(17 <= int(v) <= 46 for v in r.shift)
            and bool(np.all((b >= -(2**30)) & (b < 2**30))) and iy * ix * 4 >= oy * ox)


def _s16_block_case(rng, case):
    """Input, weights, bias, attributes and requant block of a S16_BLOCK_CASES case."""
    n, h, w, c, kh, kw, pad, stride, dil, inputs, kind, out_dtype = case
    shape = (n, h, w, c)
    if inputs == "small":
        x, wt = rng.integers(-16, 17, shape).astype(np.int16), rng.integers(-8, 9, (kh, kw, c, 1)).astype(np.int8)
    elif inputs == "ends":
        x, wt = rng.choice(np.array([-32768, 32767], np.int16), shape), weights8(rng, (kh, kw, c, 1))
    else:
        x = rng.integers(-32768, 32767, shape, endpoint=True, dtype=np.int16)
        wt = weights8(rng, (kh, kw, c, 1))
    b = rng.integers(-(2**20), 2**20, c, dtype=np.int64)
    if kind == "bias_ends":   # every tap +-2^22 on biases at int32's reach
        x[:] = -32768
        wt[..., 0::2, :], wt[..., 1::2, :] = -128, 127
        b[0::2], b[1::2] = 2**30 - 1, -(2**30)
    elif kind == "bias_2^30":
        b[c // 2] = 2**30
    a = _attrs(pad, stride, dil, 0, 0)
    acc = depthwise_conv2d.run([x, wt, b], a)
    shifts = {3: 16} if kind == "shift16" else {c - 1: 47} if kind == "shift47" else None
    if out_dtype == "int8":
        block = requant_block_cross(rng, acc, True, "ties" if kind == "ties" else "random")
        if shifts:
            r = requant.unpack(block)
            s = np.array(r.shift)
            for ch, v in shifts.items():
                s[ch] = v
            block = requant.pack(r.output_zp, r.out_min, r.out_max, r.multiplier, s)
    elif kind == "ties":
        block = requant.pack(0, -32768, 32767, np.full(c, 2**14), 17 + np.arange(c) % 3)
    else:
        block = requant_block16(rng, acc, 0 if kind == "relu" else -32768, shifts)
    return x, wt, b, a, acc, block


@pytest.mark.parametrize("target", kernel_targets())
def test_depthwise_conv2d_s16_requant_blocks_on_every_target(kernels_on, rng, target):
    cases, outs, ties, taken = [], {"int16": [], "int8": []}, 0, 0
    for case in S16_BLOCK_CASES:
        x, wt, b, a, acc, block = _s16_block_case(rng, case)
        out_dtype = case[-1]
        want = requant.reference(acc, block, True, out_dtype)
        outs[out_dtype].append(want)
        ties += _ties(acc, block, True)
        taken += _dw16_taken(case, block, b)
        cases.append((str(case), lambda lib, x=x, wt=wt, b=b, a=a, r=block, o=out_dtype: lib.depthwise_conv2d(
            x, wt, b, **a, requant=r, out_dtype=o), want))
    run_kernel_cases(kernels_on(target), cases)
    assert taken == len(S16_BLOCK_CASES) - 5 and ties > 100   # the five fallbacks, and ties to round
    for dt, (lo, hi) in (("int16", (-32768, 32767)), ("int8", (-128, 127))):
        flat = np.concatenate([o.reshape(-1) for o in outs[dt]]).astype(np.int64)
        assert (flat == lo).any() and (flat == hi).any() and ((flat > lo) & (flat < hi)).mean() > 0.3


@pytest.mark.parametrize("target", kernel_targets("m4", "m4-noasm", "m33"))
def test_depthwise_conv2d_dsp_path_wraps_like_the_portable_path(kernels_on, rng, target):
    """Sums beyond int32 (outside the IR contract): bias 2^31 - 1000 and +32,385 at every tap of the even
    channels wrap modulo 2^32 on the DSP path exactly as on the portable path; so do the requantized
    outputs."""
    x = np.full((1, 4, 4, 12), -128, np.int8)
    w = rng.choice(np.array([-127, 127], np.int8), (3, 3, 12, 1))
    w[:, :, 0::2] = -127
    bias = np.full(12, 2**31 - 1000, np.int32)
    rq = requant.pack(3, -128, 127, [2**30 + 12345] * 12, [40] * 12)
    a = _attrs((1, 1, 1, 1), (1, 1), (1, 1), 127, 0)
    got = {t: [kernels_on(t).depthwise_conv2d(x, w, bias, **a, requant=r) for r in (None, rq)]
           for t in (target, "m4-portable")}
    for k in range(2):
        np.testing.assert_array_equal(got[target][k], got["m4-portable"][k])
    assert (got[target][0][..., 0::2] < 0).any()  # the even channels' sums did leave int32 and wrap



# ---- precision boundaries: tabula_depthwise_conv2d_s16_s8 / _s8_s16 ------------------------------------
# The fused DEPTHWISE_CONV2D + RESCALE (+ CLAMP) of a scheme=mixed boundary (int16 in -> int8 out, int8 in
# -> int16 out) on every target, bit-exact with the reference then RESCALE then CLAMP: channel tails 1-9
# and 17 (Helium's 8-channel blocks and vector epilogue, DSP's quads), 1-pixel maps, padding-only
# windows, windows wholly in the padding, stride, dilation, multiplier 2 (gathers), a weight zero point
# (portable), 256 taps (the fast paths' limit) and 272 (portable there), inputs and zero points at the
# ends, shifts and multipliers at the ends of their ranges (edges), exact ties (ties).
# (N, H, W, C, M, KH, KW, pad, stride, dilation, input_zp (int8 in), weight_zp, block kind, end inputs)
CROSS_CASES = [
    *[(1, 4, 5, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 7 * c - 40, 0, "random", False) for c in (*range(1, 10), 17)],
    *[(1, 4, 3, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges", True) for c in (5, 8, 9, 17)],
    *[(1, 5, 4, c, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "ties", False) for c in (3, 8, 13)],
    (1, 1, 1, 9, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "random", True),            # 1-pixel map
    (1, 1, 1, 16, 1, 3, 1, (1, 1, 0, 0), (1, 1), (1, 1), -128, 0, "edges", True),           # 1-pixel map, line
    (1, 2, 2, 11, 1, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random", False),            # padding-only pixels
    (1, 3, 2, 8, 1, 3, 3, (4, 0, 0, 3), (1, 1), (1, 1), -1, 0, "random", False),            # windows in the padding
    (2, 9, 8, 24, 1, 3, 3, (1, 1, 1, 1), (2, 2), (2, 2), 3, 0, "random", False),            # stride, dilation
    (1, 9, 10, 16, 1, 3, 1, (0, 2, 0, 0), (2, 1), (3, 1), -128, 0, "ties", False),          # line, stride, dilation
    (1, 4, 4, 5, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "random", False),             # multiplier 2
    (1, 4, 4, 8, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, -5, "edges", False),             # weight zp
    (1, 16, 16, 4, 1, 16, 16, (7, 8, 7, 8), (1, 1), (1, 1), 5, 0, "random", True),          # 256 taps
    (1, 17, 16, 4, 1, 17, 16, (8, 8, 7, 8), (4, 4), (1, 1), 5, 0, "random", False),         # 272 taps
    (1, 8, 8, 64, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -7, 0, "random", False),
]


def _cross_inputs(rng, case, wide):
    """Input, weights, bias and attributes of a CROSS_CASES case: int16 in (``wide``, no zero point) or int8
    in.  ``ties``: small values, so that the accumulators are small and ties frequent."""
    n, h, w, c, m, kh, kw, pad, stride, dil, izp, wzp, kind, ends = case
    shape = (n, h, w, c)
    if kind == "ties":
        x = rng.integers(-16, 17, shape).astype(np.int16 if wide else np.int8)
        if not wide:
            x = (x.astype(np.int16) + izp).clip(-128, 127).astype(np.int8)
        wt = rng.integers(-8, 9, (kh, kw, c, m)).astype(np.int8)
        b = rng.integers(-64, 65, c * m)
    else:
        if wide:
            x = (rng.choice(np.array([-32768, 32767], np.int16), shape) if ends
                 else rng.integers(-32768, 32767, shape, endpoint=True, dtype=np.int16))
        else:
            x = int8(rng, shape, ends)
        wt = weights8(rng, (kh, kw, c, m)) if wzp == 0 else rng.integers(-128, 128, (kh, kw, c, m)).astype(np.int8)
        b = rng.integers(-(2**20), 2**20, c * m) if wide else rng.integers(-(2**14), 2**14, c * m)
    return x, wt, b.astype(np.int64 if wide else np.int32), _attrs(pad, stride, dil, 0 if wide else izp, wzp)


def _ties(acc, block, acc48):
    """How many accumulators are exact ties of their channel's rounding (the product's low ``shift`` bits
    exactly 2^(shift-1))."""
    r = requant.unpack(block)
    p = acc.astype(object) * np.array([int(v) for v in r.multiplier], dtype=object)
    s = np.array([int(v) for v in r.shift], dtype=object)
    return int(np.sum((p % (2**s)) == 2 ** (s - 1)))


@pytest.mark.parametrize("wide", [True, False], ids=["s16_s8", "s8_s16"])
@pytest.mark.parametrize("target", kernel_targets())
def test_depthwise_conv2d_precision_boundary_on_every_target(kernels_on, rng, target, wide):
    out_dtype = "int8" if wide else "int16"
    cases, outs, ties = [], [], 0
    for case in CROSS_CASES:
        x, wt, b, a = _cross_inputs(rng, case, wide)
        acc = depthwise_conv2d.run([x, wt, b], a)
        block = requant_block_cross(rng, acc, wide, case[12])
        want = requant.reference(acc, block, wide, out_dtype)
        outs.append(want)
        ties += _ties(acc, block, wide)
        cases.append((str(case), lambda lib, x=x, wt=wt, b=b, a=a, r=block: lib.depthwise_conv2d(
            x, wt, b, **a, requant=r, out_dtype=out_dtype), want))
    run_kernel_cases(kernels_on(target), cases)
    flat = np.concatenate([o.reshape(-1) for o in outs]).astype(np.int64)
    lo, hi = (-128, 127) if wide else (-32768, 32767)
    assert ties > 50 and (flat == lo).any() and (flat == hi).any() and ((flat > lo) & (flat < hi)).mean() > 0.3


@pytest.mark.host
@pytest.mark.parametrize("wide", [True, False], ids=["s16_s8", "s8_s16"])
def test_precision_boundary_kernels_refuse_a_missing_or_bad_block(kernel_lib, rng, wide):
    """No block (there is no accumulator output: nothing written), a multiplier outside the accumulator's
    range (int48: 2^15; int32: a negative word), bounds or a zero point outside the output type:
    TABULA_ERR_ARG.  An int32 accumulator's multiplier may exceed int48's limit."""
    x, wt, b, a = _cross_inputs(rng, (1, 4, 4, 3, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0, 0, "random", False), wide)
    acc = depthwise_conv2d.run([x, wt, b], a)
    out_dtype = "int8" if wide else "int16"
    good = requant_block_cross(rng, acc, wide)
    np.testing.assert_array_equal(kernel_lib.depthwise_conv2d(x, wt, b, **a, requant=good, out_dtype=out_dtype),
                                  requant.reference(acc, good, wide, out_dtype))
    r = requant.unpack(good)
    m_end = 2**15 if wide else 2**31 - 1   # int32 words: 2^31 is not a word; -1 wraps it
    lo, hi = (-128, 127) if wide else (-32768, 32767)
    bad = [requant.pack(r.output_zp, r.out_min, r.out_max, [m_end if wide else -1, *r.multiplier[1:]], r.shift),
           requant.pack(r.output_zp, lo - 1, r.out_max, r.multiplier, r.shift),
           requant.pack(r.output_zp, r.out_min, hi + 1, r.multiplier, r.shift),
           requant.pack(128 if wide else 1, r.out_min, r.out_max, r.multiplier, r.shift)]
    if not wide:   # apply_scale_16's limit does not bind an int32 accumulator
        ok = requant.pack(0, lo, hi, [2**15, *r.multiplier[1:]], r.shift)
        np.testing.assert_array_equal(kernel_lib.depthwise_conv2d(x, wt, b, **a, requant=ok, out_dtype=out_dtype),
                                      requant.reference(acc, ok, wide, out_dtype))
    for blk in bad:
        with pytest.raises(kl.KernelError):
            kernel_lib.depthwise_conv2d(x, wt, b, **a, requant=blk, out_dtype=out_dtype)
    name = f"tabula_depthwise_conv2d_{'s16_s8' if wide else 's8_s16'}"
    win = kl.KernelLib.window(x.shape, acc.shape[1:3], (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    out = np.full(acc.shape, 0x5A, np.int8 if wide else np.int16)
    args = (x, wt, 0, b, None, out) if wide else (x, 0, wt, 0, b, None, out)
    with pytest.raises(kl.KernelError):
        kernel_lib.call(name, win, 1, *args)
    assert (out == 0x5A).all()
