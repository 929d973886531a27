"""CONV2D: C tabula_conv2d_s8 / _s8_folded / _s16 == reference (tolerance 0), reference == torch conv2d
(float64 of x - zp, exact at these magnitudes), padding acts as the input zero point, int32 / int48
extremes, errors; and every ISA path on every target (the end of this file)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import int8, kernel_targets, requant_block, requant_block16, run_kernel_cases, weights8

from tabula import requant
from tabula.codegen.fusion import folded_bias
from tabula.reference.ops import conv2d

# name: (N, H, W, Cin, Cout, KH, KW, pad [t,b,l,r], stride, dilation, input_zp, weight_zp)
CASES = {
    "1x1": (1, 5, 5, 3, 4, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 3, 0),
    "3x3_pad1": (1, 8, 8, 4, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -7, 0),
    "nonsquare_stride_dilation": (2, 9, 11, 3, 6, 2, 3, (1, 0, 2, 1), (2, 1), (2, 3), 5, 0),
    "asym_pad_stride": (1, 6, 7, 2, 3, 5, 3, (2, 4, 1, 2), (1, 2), (1, 1), 17, 0),
    "zp_min": (1, 7, 6, 5, 4, 3, 2, (1, 2, 0, 1), (2, 2), (1, 1), -128, 0),
    "zp_max": (1, 7, 6, 5, 4, 3, 3, (2, 2, 2, 2), (1, 1), (2, 2), 127, 0),
    "weight_zp": (1, 6, 6, 3, 4, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 11),
    "weight_zp_ends": (1, 5, 6, 2, 3, 2, 2, (1, 0, 0, 1), (1, 1), (1, 1), 127, -128),
    "kernel_gt_input": (1, 3, 2, 4, 2, 5, 4, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0),
    "cin1_tall": (1, 10, 4, 1, 3, 7, 1, (3, 3, 0, 0), (3, 1), (1, 1), -1, 0),
    "wide_channels": (1, 4, 4, 37, 19, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0, 0),
}


def _attrs(pad, stride, dilation, izp, wzp) -> dict:
    return {"pad": list(pad), "stride": list(stride), "dilation": list(dilation), "input_zp": izp, "weight_zp": wzp}


def _random(rng, case):
    n, h, w, cin, cout, kh, kw, pad, stride, dil, izp, wzp = case
    x = rng.integers(-128, 127, (n, h, w, cin), endpoint=True, dtype=np.int8)
    lo = -127 if wzp == 0 else -128  # symmetric weights live in [-127, 127]
    wt = rng.integers(lo, 127, (cout, kh, kw, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**20), 2**20, cout, dtype=np.int32)
    return x, wt, b, _attrs(pad, stride, dil, izp, wzp)


def _c(kernel_lib, x, w, b, a):
    return kernel_lib.conv2d(x, w, b, pad=a["pad"], stride=a["stride"], dilation=a["dilation"],
                             input_zp=a["input_zp"], weight_zp=a["weight_zp"])


@pytest.mark.host
@pytest.mark.parametrize("name", CASES)
def test_c_equals_reference(kernel_lib, rng, name):
    x, w, b, a = _random(rng, CASES[name])
    want = conv2d.run([x, w, b], a)
    got = _c(kernel_lib, x, w, b, a)
    assert got.dtype == np.int32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # bias == NULL in C is a zero bias
    np.testing.assert_array_equal(_c(kernel_lib, x, w, None, a), want - b.astype(np.int32))


@pytest.mark.parametrize("name", CASES)
def test_reference_equals_torch(rng, name):
    x, w, b, a = _random(rng, CASES[name])
    pt, pb, pl, pr = a["pad"]
    xf = torch.from_numpy(x.astype(np.float64) - a["input_zp"]).permute(0, 3, 1, 2)  # NCHW
    xf = F.pad(xf, (pl, pr, pt, pb))  # zeros == the input zero point after subtracting it
    wf = torch.from_numpy(w.astype(np.float64) - a["weight_zp"]).permute(0, 3, 1, 2)  # OIHW
    yf = F.conv2d(xf, wf, torch.from_numpy(b.astype(np.float64)), stride=a["stride"], dilation=a["dilation"])
    want = yf.permute(0, 2, 3, 1).numpy()
    got = conv2d.run([x, w, b], a)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.astype(np.float64), want)


@pytest.mark.host
@pytest.mark.parametrize("name", ["3x3_pad1", "nonsquare_stride_dilation", "zp_min", "zp_max", "weight_zp_ends"])
def test_padding_acts_as_input_zero_point(kernel_lib, rng, name):
    x, w, b, a = _random(rng, CASES[name])
    pt, pb, pl, pr = a["pad"]
    xpad = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=a["input_zp"])
    a0 = {**a, "pad": [0, 0, 0, 0]}
    want = _c(kernel_lib, xpad, w, b, a0)  # explicit zp padding, no kernel padding
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), want)
    np.testing.assert_array_equal(conv2d.run([x, w, b], a), want)
    # an input that is all zero point gives exactly the bias everywhere, border included
    xz = np.full_like(x, a["input_zp"])
    np.testing.assert_array_equal(_c(kernel_lib, xz, w, b, a), np.broadcast_to(b, want.shape))


@pytest.mark.host
@pytest.mark.parametrize(
    "xv, izp, wv, wzp",
    [(-128, 127, -128, 127), (-128, 127, 127, -128), (-128, 127, -127, 0), (127, -128, -127, 0)],
    ids=["max_general", "min_general", "max_hoisted", "min_hoisted"],
)
def test_int32_accumulator_extremes(kernel_lib, xv, izp, wv, wzp):
    # every term is (x - zx)(w - zw) = +-255*255 or +-255*127 over 3x3x64 taps; the bias brings the
    # exact sum to INT32_MAX or INT32_MIN.  The hoisted (weight_zp == 0) path wraps in between
    # (bias + sum x w overflows) and must still land exactly.
    cin, cout = 64, 2
    x = np.full((1, 3, 3, cin), xv, dtype=np.int8)
    w = np.full((cout, 3, 3, cin), wv, dtype=np.int8)
    a = _attrs((0, 0, 0, 0), (1, 1), (1, 1), izp, wzp)
    total = (xv - izp) * (wv - wzp) * 9 * cin
    target = 2**31 - 1 if total > 0 else -(2**31)
    b = np.full(cout, target - total, dtype=np.int64)
    assert np.all((b >= -(2**31)) & (b < 2**31))
    b = b.astype(np.int32)
    want = np.full((1, 1, 1, cout), target, dtype=np.int32)
    np.testing.assert_array_equal(conv2d.run([x, w, b], a), want)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), want)


@pytest.mark.host
def test_hoisted_zero_point_wraps_exactly(kernel_lib):
    # x == zp: the exact result is the bias (INT32_MAX) although bias + sum x*w alone overflows
    x = np.full((1, 3, 3, 64), 127, dtype=np.int8)
    w = np.full((2, 3, 3, 64), 127, dtype=np.int8)
    b = np.full(2, 2**31 - 1, dtype=np.int32)
    a = _attrs((1, 1, 1, 1), (1, 1), (1, 1), 127, 0)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), np.full((1, 3, 3, 2), 2**31 - 1))


def test_reference_rejects_overflow_and_bad_attrs():
    x = np.full((1, 1, 1, 4), -128, dtype=np.int8)
    w = np.full((1, 1, 1, 4), -127, dtype=np.int8)  # (x - zp) * w = +255*127 per tap
    b = np.array([2**31 - 1], dtype=np.int32)
    with pytest.raises(ValueError, match="overflow"):
        conv2d.run([x, w, b], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 127, 0))
    with pytest.raises(ValueError, match="input_zp"):
        conv2d.run([x, w, b * 0], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 128, 0))
    with pytest.raises(ValueError, match="stride"):
        conv2d.run([x, w, b * 0], _attrs((0, 0, 0, 0), (0, 1), (1, 1), 0, 0))


@pytest.mark.host
@pytest.mark.parametrize(
    "field, value",
    [("stride_y", 0), ("dilation_x", 0), ("pad_top", -1), ("kernel_w", 0), ("c", 0), ("out_h", 0)],
)
def test_c_rejects_bad_window(kernel_lib, field, value):
    import ctypes

    from tabula.harness import host as kl

    x = np.zeros((1, 4, 4, 2), dtype=np.int8)
    w = np.zeros((3, 3, 3, 2), dtype=np.int8)
    out = np.full((1, 2, 2, 3), 7, dtype=np.int32)
    win = kl.KernelLib.window(x.shape, (2, 2), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0))
    assert kernel_lib.lib.tabula_conv2d_s8(ctypes.byref(win), 3, x.ctypes.data_as(kl._i8p), 0,
                                           w.ctypes.data_as(kl._i8p), 0, None, None, out.ctypes.data_as(kl._i32p)) == kl.TABULA_OK
    setattr(win, field, value)
    status = kernel_lib.lib.tabula_conv2d_s8(ctypes.byref(win), 3, x.ctypes.data_as(kl._i8p), 0,
                                             w.ctypes.data_as(kl._i8p), 0, None, None, out.ctypes.data_as(kl._i32p))
    assert status == kl.TABULA_ERR_ARG


@pytest.mark.host
@pytest.mark.parametrize("izp, wzp, cout", [(128, 0, 2), (-129, 0, 2), (0, 128, 2), (0, 0, 0)])
def test_c_rejects_bad_zero_points(kernel_lib, izp, wzp, cout):
    from tabula.harness import host as kl

    x = np.zeros((1, 2, 2, 1), dtype=np.int8)
    w = np.zeros((max(cout, 1), 1, 1, 1), dtype=np.int8)
    with pytest.raises(kl.KernelError) as e:
        kernel_lib.conv2d(x, w[:cout] if cout else w[:0], None, pad=(0, 0, 0, 0), stride=(1, 1), dilation=(1, 1),
                          input_zp=izp, weight_zp=wzp)
    assert e.value.status == kl.TABULA_ERR_ARG


# --- int16 x int8 -> int48 (tabula_conv2d_s16) ---------------------------------------------------
# name: (N, H, W, Cin, Cout, KH, KW, pad [t,b,l,r], stride, dilation, weight_zp); input_zp is 0
CASES_S16 = {
    "1x1": (1, 5, 5, 3, 4, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 0),
    "3x3_pad1": (1, 8, 8, 4, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
    "nonsquare_stride_dilation": (2, 9, 11, 3, 6, 2, 3, (1, 0, 2, 1), (2, 1), (2, 3), 0),
    "asym_pad_stride": (1, 6, 7, 2, 3, 5, 3, (2, 4, 1, 2), (1, 2), (1, 1), 0),
    "weight_zp": (1, 6, 6, 3, 4, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128),
    "kernel_gt_input": (1, 3, 2, 4, 2, 5, 4, (2, 2, 2, 2), (1, 1), (1, 1), 127),
    "wide_channels": (1, 4, 4, 300, 7, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
}


def _random_s16(rng, case):
    n, h, w, cin, cout, kh, kw, pad, stride, dil, wzp = case
    x = rng.integers(-32768, 32767, (n, h, w, cin), endpoint=True, dtype=np.int16)
    wt = rng.integers(-128 if wzp else -127, 127, (cout, kh, kw, cin), endpoint=True, dtype=np.int8)
    b = rng.integers(-(2**40), 2**40, cout, dtype=np.int64)
    return x, wt, b, _attrs(pad, stride, dil, 0, wzp)


@pytest.mark.host
@pytest.mark.parametrize("name", CASES_S16)
def test_s16_c_equals_reference_equals_torch(kernel_lib, rng, name):
    x, w, b, a = _random_s16(rng, CASES_S16[name])
    want = conv2d.run([x, w, b], a)
    assert want.dtype == np.int64
    got = _c(kernel_lib, x, w, b, a)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, None, a), want - b)
    # float64 oracle: every partial sum stays below 2^53, so the float conv is exact
    pt, pb, pl, pr = a["pad"]
    xf = F.pad(torch.from_numpy(x.astype(np.float64)).permute(0, 3, 1, 2), (pl, pr, pt, pb))
    wf = torch.from_numpy(w.astype(np.float64) - a["weight_zp"]).permute(0, 3, 1, 2)
    yf = F.conv2d(xf, wf, None, stride=a["stride"], dilation=a["dilation"]).permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal((want - b).astype(np.float64), yf)


@pytest.mark.host
@pytest.mark.parametrize("sign", [1, -1])
def test_s16_int48_extremes(kernel_lib, sign):
    # taps of +-32768 * 127 (or * 255 with weight_zp) plus a bias that lands exactly on the int48 ends;
    # an int32 (or wrapped 48-bit) accumulator would be visibly wrong.
    x = np.full((1, 3, 3, 64), -32768, dtype=np.int16)
    w = np.full((2, 3, 3, 64), -127 * sign, dtype=np.int8)
    a = _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0)
    total = -32768 * -127 * sign * 9 * 64
    target = 2**47 - 1 if sign > 0 else -(2**47)
    b = np.full(2, target - total, dtype=np.int64)
    want = np.full((1, 1, 1, 2), target, dtype=np.int64)
    np.testing.assert_array_equal(conv2d.run([x, w, b], a), want)
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, a), want)
    with pytest.raises(ValueError, match="int48 accumulator overflow"):
        conv2d.run([x, w, b + sign], a)


def test_s16_reference_rejects():
    x = np.zeros((1, 2, 2, 1), np.int16)
    w = np.zeros((1, 1, 1, 1), np.int8)
    with pytest.raises(ValueError, match="input_zp"):
        conv2d.run([x, w, np.zeros(1, np.int64)], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 3, 0))
    with pytest.raises(ValueError, match="dtypes"):
        conv2d.run([x, w, np.zeros(1, np.int32)], _attrs((0, 0, 0, 0), (1, 1), (1, 1), 0, 0))


@pytest.mark.host
@pytest.mark.parametrize("field, value", [("stride_y", 0), ("dilation_x", 0), ("pad_top", -1), ("c", 0), ("out_h", 0),
                                          ("weight_zp", 128), ("weight_zp", -129), ("out_c", 0)])
def test_s16_c_rejects(kernel_lib, field, value):
    import ctypes

    from tabula.harness import host as kl

    x = np.zeros((1, 4, 4, 2), dtype=np.int16)
    w = np.zeros((3, 3, 3, 2), dtype=np.int8)
    out = np.full((1, 2, 2, 3), 7, dtype=np.int64)
    win = kl.KernelLib.window(x.shape, (2, 2), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0))
    args = {"out_c": 3, "weight_zp": 0}

    def call():
        return kernel_lib.lib.tabula_conv2d_s16(ctypes.byref(win), args["out_c"], x.ctypes.data_as(kl._i16p),
                                                w.ctypes.data_as(kl._i8p), args["weight_zp"], None, None,
                                                out.ctypes.data_as(kl._i64p))

    assert call() == kl.TABULA_OK
    if field in args:
        args[field] = value
    else:
        setattr(win, field, value)
    assert call() == kl.TABULA_ERR_ARG


# --- input zero point folded into the bias (codegen's fold_input_zp + tabula_conv2d_s8_folded) ------
# Helium's paths per pixel: 1x1 direct (GEMM rows), patch <= 2048 bytes, tap tiling above it; channel
# tails of 1..3 (blocks of 4) and input tails of 1..15 bytes (vectors of 16).
FOLDED_CASES = {
    **{k: v for k, v in CASES.items() if v[-1] == 0},
    "1x1_gemm_tail3": (1, 4, 3, 32, 7, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0),
    "1x1_pad_stride": (1, 5, 5, 19, 5, 1, 1, (1, 1, 0, 2), (2, 2), (1, 1), 127, 0),
    "cin1_cout1": (1, 6, 6, 1, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0),
    "one_pixel_map": (1, 1, 1, 15, 6, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0),
    "patch_over_4k": (1, 3, 3, 520, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 77, 0),
}


def _folded(kernel_lib, x, w, b, a, requant=None):
    from tabula.codegen.fusion import fold_input_zp
    from tabula.ir import Graph, Op, Tensor

    g = Graph()
    g.add_tensor(Tensor("x", x.shape, "int8", zero_point=a["input_zp"]))
    g.add_tensor(Tensor("w", w.shape, "int8"), w)
    g.add_tensor(Tensor("b", b.shape, "int32"), b)
    g.add_tensor(Tensor("acc", (1,), "int32"))
    g.add_op(Op("CONV2D", ["x", "w", "b"], ["acc"], dict(a)))
    f = fold_input_zp(g)
    op = f.ops[0]
    assert op.attrs["folded"] and "b" not in f.tensors and "b" in g.tensors
    return kernel_lib.conv2d_folded(x, w, f.constants[op.inputs[2]], pad=a["pad"], stride=a["stride"],
                                    dilation=a["dilation"], pad_value=a["input_zp"], requant=requant)


@pytest.mark.host
@pytest.mark.parametrize("name", FOLDED_CASES)
def test_folded_bias_kernel_equals_reference(kernel_lib, rng, name):
    x, w, b, a = _random(rng, FOLDED_CASES[name])
    np.testing.assert_array_equal(_folded(kernel_lib, x, w, b, a), conv2d.run([x, w, b], a))


@pytest.mark.host
def test_folded_bias_is_the_full_kernel_weight_sum():
    """bias' = bias - zp * sum of every weight of the channel (padded taps included), and an op whose
    bias' would not fit int32 is left unfolded."""
    from tabula.codegen.fusion import fold_input_zp
    from tabula.ir import Graph, Op, Tensor

    def graph(bias, zp=-128, wzp=0):
        g = Graph()
        g.add_tensor(Tensor("x", (1, 4, 4, 2), "int8", zero_point=zp))
        g.add_tensor(Tensor("w", (2, 3, 3, 2), "int8"), np.full((2, 3, 3, 2), 127, np.int8))
        g.add_tensor(Tensor("b", (2,), "int32"), np.array(bias, np.int32))
        g.add_tensor(Tensor("acc", (1, 4, 4, 2), "int32"))
        g.add_op(Op("CONV2D", ["x", "w", "b"], ["acc"], _attrs((1, 1, 1, 1), (1, 1), (1, 1), zp, wzp)))
        return g

    f = fold_input_zp(graph([5, -5]))
    np.testing.assert_array_equal(f.constants[f.ops[0].inputs[2]], [5 + 128 * 127 * 18, -5 + 128 * 127 * 18])
    assert fold_input_zp(graph([2**31 - 1, 0])).ops[0].attrs.get("folded") is None
    assert fold_input_zp(graph([0, 0], wzp=3)).ops[0].attrs.get("folded") is None


# ---- every path on every target ---------------------------------------------------------------------
# tabula_conv2d_s8, _s8_folded and _s16 with and without the fused requantization, on the host and the
# emulated cores (tests/helpers.KERNEL_TARGETS: the M55's Helium paths, its portable C, the Helium paths
# with the C twins of their assembly loops; the M4's DSP paths, portable, C twins; the M33), bit-exact
# with the reference (then RESCALE + CLAMP, tabula.requant.reference).  Edges where the vector and
# blocked paths have tails: output channel tails 1-15, odd channels and pixels (the DSP 2 x 2 blocks), a
# pixel pair spanning two batch items, 1-pixel maps, 1 input channel, Cin % 4 == 0 and != 0, K < 4,
# patches over 2 KiB and 4 KiB (Helium tap tiling), K = 1024 (the largest DSP patch) and 1026 (portable
# there), zero points at the int8 ends, asymmetric padding, stride, dilation, pixels with padding only,
# a weight zero point (portable on the ISA paths).
# (N, H, W, Cin, Cout, KH, KW, pad [t,b,l,r], stride, dilation, input_zp, weight_zp, block, edge inputs)
PATH_CASES = [
    (1, 8, 8, 16, 32, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 0, "random", False),
    (1, 6, 6, 32, 19, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 5, 0, "random", False),
    *[(1, 3, 3, (co * 7) % 17 + 1, co, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 11, 0, "random", False) for co in range(1, 16)],
    (1, 1, 1, 8, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "edges", False),         # 1-pixel map
    (1, 7, 7, 1, 8, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "random", False),          # 1 input channel
    (1, 3, 3, 300, 4, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "random", False),       # patch 2,700 B > 2 KiB
    (1, 3, 2, 520, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "edges", False),         # patch 4,680 B > 4 KiB
    (2, 9, 8, 3, 9, 2, 3, (1, 0, 2, 1), (2, 1), (2, 2), 5, -7, "random", False),           # asym pad, stride, dilation
    (1, 2, 2, 11, 6, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "random", False),           # padding-only pixels
    (1, 3, 3, 4, 1, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "extremes", True),       # Cout 1, 9 pixels, Cin % 4 == 0
    (1, 1, 1, 3, 3, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 127, 0, "extremes", True),        # K = 3: no group of 4
    (2, 3, 3, 5, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 7, 0, "extremes", False),         # a pixel pair spans the batch
    (2, 5, 4, 6, 5, 2, 2, (1, 0, 0, 1), (1, 2), (2, 1), -9, 0, "extremes", False),        # staged, asymmetric pad
    (1, 6, 5, 8, 4, 3, 3, (2, 2, 2, 2), (3, 3), (1, 1), 0, 0, "extremes", False),         # stride 3, pad 2
    (1, 7, 6, 12, 6, 3, 2, (0, 0, 0, 0), (1, 1), (3, 2), 100, 0, "extremes", False),      # dilation, no pad
    (1, 4, 4, 113, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "extremes", True),     # K = 1017 (tail 1)
    (1, 2, 3, 256, 5, 2, 2, (0, 1, 1, 0), (1, 1), (1, 1), 127, 0, "extremes", False),     # K = 1024: the largest DSP patch
    (1, 3, 3, 114, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 3, 0, "extremes", False),       # K = 1026: portable on the DSP
    (1, 4, 4, 7, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, -7, "extremes", False),       # weight zp: portable
    (1, 2, 2, 9, 7, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), 9, 0, "extremes", False),         # padding-only pixels
]
# the folded-bias kernel: the cases with symmetric weights, Helium's GEMM (1x1 rows; the assembly loop
# for rows of a multiple of 16 bytes, the C loop otherwise), 2 tiles of 64 channels, 1x1 with padding;
# "ties" blocks (every shift >= 33: the vector epilogue) put exact ties and extremes through it
FOLDED_PATH_CASES = [c[:12] + ("ties" if c[12] in ("random", "edges") else c[12], c[13]) for c in PATH_CASES if c[11] == 0] + [
    *[(1, 3, 2, ci, 16 + ci % 4, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0, "ties", False) for ci in (1, 15, 16, 17, 48, 80)],
    (1, 4, 4, 64, 67, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 3, 0, "random", False),          # 2 tiles of 64 channels
    (1, 5, 5, 7, 4, 1, 1, (1, 0, 0, 1), (2, 1), (1, 1), 127, 0, "edges", False),           # 1x1 with padding, stride
    # Helium's short rows (kh*kw*cin <= 64, cout <= 64, every shift >= 33: tabula_conv2d_small_mve.h): a
    # first conv 3 -> 8 3x3/2 with SAME padding, Cin 1-4 with output channel tails, pointwise Cin 8-32
    # (K = 16, 17, 32: one vector, a second one of 1 byte, two), 1-pixel maps, padding-only pixels,
    # zero points and inputs at the ends
    (1, 9, 9, 3, 8, 3, 3, (0, 1, 0, 1), (2, 2), (1, 1), -128, 0, "ties", True),
    *[(1, 4, 5, ci, co, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 37 * ci - 100, 0, "ties", False)
      for ci, co in ((1, 8), (2, 5), (3, 13), (4, 32), (3, 16))],
    *[(1, 3, 4, ci, co, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 127, 0, "ties", ci == 8)
      for ci, co in ((8, 16), (8, 3), (16, 32), (17, 9), (32, 24), (12, 31))],
    (1, 1, 1, 3, 8, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "ties", True),             # 1-pixel map
    (1, 2, 2, 8, 16, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), -128, 0, "ties", True),           # padding-only pixels
    (1, 2, 2, 3, 8, 3, 3, (3, 3, 3, 3), (1, 1), (1, 1), 127, 0, "ties", True),             # windows in the padding
    (1, 7, 2, 2, 8, 3, 3, (1, 1, 2, 2), (1, 1), (2, 1), -5, 0, "ties", False),             # kernel wider than the map
    (1, 6, 9, 1, 16, 3, 5, (2, 0, 2, 2), (2, 3), (1, 2), 9, 0, "ties", False),             # dilation_x: per-tap gather
    (1, 5, 3, 4, 40, 2, 2, (0, 1, 1, 0), (1, 1), (1, 1), -128, 0, "ties", True),           # 40 channels
    # short rows of 33-64 bytes (3-4 vectors): kws's first conv 10x4x1/2 (K = 40), 3x3x5 (K = 45), 7x7x1
    # (K = 49), 4x4x4 (K = 64), pointwise 33 / 48 / 64, channel tails, padding, zero points at the ends
    (1, 13, 10, 1, 64, 10, 4, (4, 5, 1, 2), (2, 2), (1, 1), -128, 0, "ties", True),        # kws, K = 40
    (1, 13, 10, 1, 13, 10, 4, (4, 5, 1, 2), (2, 2), (1, 1), 127, 0, "ties", False),        # K = 40, 13 channels
    (1, 5, 6, 5, 21, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "ties", True),            # K = 45
    (1, 6, 7, 1, 16, 7, 7, (3, 3, 3, 3), (2, 1), (1, 1), -128, 0, "ties", False),          # K = 49
    (1, 5, 5, 4, 30, 4, 4, (1, 2, 2, 1), (1, 1), (1, 1), 5, 0, "ties", True),              # K = 64
    *[(1, 3, 4, ci, co, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0, "ties", True)
      for ci, co in ((33, 8), (48, 19), (64, 64))],
    # Helium's pixel pairs (kh*kw*cin % 16 == 0, every shift >= 33: conv_pair_mve, each weight vector
    # loaded once for two pixels): an odd output width (a last single pixel), odd channels (the last one
    # alone), stride 2, asymmetric padding, a pair spanning padding and inside, 2 tiles of 64 channels
    # (70), a 1x1 window with padding, zero points and inputs at the int8 ends
    (1, 5, 7, 16, 32, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -128, 0, "ties", True),          # width 7
    (1, 6, 5, 16, 13, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1), 127, 0, "ties", False),          # stride 2, 13 channels
    (2, 4, 5, 16, 7, 3, 3, (0, 2, 1, 2), (1, 1), (1, 1), -128, 0, "ties", True),           # asymmetric pad, batch 2
    (1, 3, 4, 32, 70, 3, 3, (1, 1, 1, 1), (1, 2), (1, 1), 127, 0, "ties", False),          # 2 tiles, odd width 2-1
    (1, 3, 5, 16, 65, 1, 1, (1, 1, 1, 1), (1, 1), (1, 1), 5, 0, "ties", False),            # 1x1 with padding
    (1, 4, 3, 48, 3, 2, 2, (1, 0, 1, 0), (1, 1), (1, 1), -128, 0, "ties", True),           # K = 192, 3 channels
    # the DSP pixel pairs with the SSAT epilogue (every shift >= 33, the whole int8 range, even Cout, K % 4
    # == 0): K % 8 == 4 after passes of 8 (12, 20), K = 4 (no pass of 8), kws's 64 -> 64 pointwise with an
    # odd pixel count (the last pixel alone), a clamp inside the range (ties_relu: the general epilogue)
    (1, 3, 4, 12, 10, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 127, 0, "ties", True),           # K = 12
    (1, 3, 3, 20, 6, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0, "ties", False),          # K = 20, 9 pixels
    (1, 2, 3, 4, 8, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 5, 0, "ties", True),               # K = 4
    (1, 5, 5, 64, 64, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0, "ties", True),          # kws's pointwise
    (1, 4, 5, 16, 8, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 0, "ties_relu", True),        # a clamp in the range
    (1, 3, 3, 64, 6, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 9, 0, "ties_relu", False),
]
# int16 x int8 (a16w8): K % 4 == 0, a K tail of 2 with odd Cout, K = 3 (no group) with Cout 1, K = 1026
# (portable on the DSP), a weight zero point (portable)
S16_PATH_CASES = [
    (1, 5, 5, 8, 6, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
    (2, 4, 3, 3, 5, 3, 2, (1, 0, 0, 1), (1, 2), (2, 1), 0),
    (1, 1, 1, 3, 1, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 0),
    (1, 3, 3, 114, 2, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 0),
    (1, 4, 4, 5, 3, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 9),
]


def _path_case(rng, case):
    n, h, w, cin, cout, kh, kw, pad, stride, dil, izp, wzp, kind, edges = case
    x, wt = int8(rng, (n, h, w, cin), edges), weights8(rng, (cout, kh, kw, cin))
    b = rng.integers(-(2**16), 2**16, cout, dtype=np.int32)
    return x, wt, b, _attrs(pad, stride, dil, izp, wzp), kind


def _with_requant(rng, label, acc, call, kind, wide=False):
    """The two calls of one case: the int32 (int48) accumulators, and requantized by a block of ``kind``."""
    block = requant_block16(rng, acc) if wide else requant_block(rng, acc, kind)
    return [(f"{label} acc", lambda lib: call(lib, None), acc),
            (f"{label} requant", lambda lib: call(lib, block), requant.reference(acc, block, wide))]


def _target_kws(a):
    return {k: a[k] for k in ("pad", "stride", "dilation")}


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s8_on_every_target(kernels_on, rng, target):
    cases = []
    for case in PATH_CASES:
        x, wt, b, a, kind = _path_case(rng, case)
        call = lambda lib, rq, x=x, wt=wt, b=b, a=a: lib.conv2d(x, wt, b, **a, requant=rq)  # noqa: E731
        cases += _with_requant(rng, str(case), conv2d.run([x, wt, b], a), call, kind)
    run_kernel_cases(kernels_on(target), cases)


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s8_folded_on_every_target(kernels_on, rng, target):
    """tabula_conv2d_s8_folded as codegen calls it: bias - input_zp * sum(w), pad_value = input_zp."""
    cases = []
    for case in FOLDED_PATH_CASES:
        x, wt, b, a, kind = _path_case(rng, case)
        bf = folded_bias(wt, b, a["input_zp"])
        call = lambda lib, rq, x=x, wt=wt, bf=bf, a=a: lib.conv2d_folded(  # noqa: E731
            x, wt, bf, **_target_kws(a), pad_value=a["input_zp"], requant=rq)
        cases += _with_requant(rng, str(case), conv2d.run([x, wt, b], a), call, kind)
    run_kernel_cases(kernels_on(target), cases)
    ties = [w for label, _, w in cases if "'ties'" in label and label.endswith("requant")]
    assert sum(int(((w > -128) & (w < 127)).sum()) for w in ties) > 100  # the vector epilogue's outputs vary


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s16_on_every_target(kernels_on, rng, target):
    cases = []
    for case in S16_PATH_CASES:
        n, h, w, cin, cout, kh, kw, pad, stride, dil, wzp = case
        x = rng.integers(-32768, 32767, (n, h, w, cin), endpoint=True, dtype=np.int16)
        wt = weights8(rng, (cout, kh, kw, cin))
        b = rng.integers(-(2**40), 2**40, cout, dtype=np.int64)
        a = _attrs(pad, stride, dil, 0, wzp)
        call = lambda lib, rq, x=x, wt=wt, b=b, a=a: lib.conv2d(x, wt, b, **a, requant=rq)  # noqa: E731
        cases += _with_requant(rng, str(case), conv2d.run([x, wt, b], a), call, None, wide=True)
    run_kernel_cases(kernels_on(target), cases)


# int16 x int8 with accumulators that fit int32 (biases within 2^20): Helium's vector int48 epilogue
# (4 channels per vector, shifts in [17, 46]) next to its per-channel fallback -- a channel whose bias
# (2^40) keeps its block of 4 out of int32, a block with a shift of 16 or 47 (the whole call per channel).
# Fields: 1x1 rows of the input itself (kws's 64 -> 64 pointwise), a 1x3 row inside the input, 3x3 with
# padding gathered as rows on an odd width, kws's 10x4x1 first conv (stride 2, asymmetric padding), ic's
# 3x3x3, dilation_x 2 (tap by tap), padding-only pixels; output channel tails 1-3 and odd (a row paired
# with itself), inputs at the int16 ends, outputs saturating and clamped at 0 (a fused ReLU).
# (N, H, W, Cin, Cout, KH, KW, pad, stride, dilation, int16-end inputs, out_min, big-bias channel, shifts)
S16_VEC_CASES = [
    (1, 3, 5, 64, 64, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), False, -32768, None, None),
    (1, 5, 7, 16, 13, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True, 0, None, None),
    (1, 4, 6, 5, 9, 1, 3, (0, 0, 0, 0), (1, 1), (1, 1), True, -32768, 5, None),
    (1, 13, 10, 1, 64, 10, 4, (4, 5, 1, 2), (2, 2), (1, 1), False, 0, None, None),
    (1, 6, 6, 3, 16, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True, -32768, 2, None),
    (1, 6, 9, 4, 7, 2, 3, (1, 0, 2, 2), (1, 2), (1, 2), True, -32768, None, None),
    (1, 2, 2, 9, 6, 1, 1, (2, 2, 2, 2), (1, 1), (1, 1), False, -32768, None, None),
    (1, 3, 3, 8, 10, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), False, -32768, None, {3: 16}),
    (1, 3, 3, 8, 11, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True, -32768, None, {0: 47}),
]


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s16_vector_epilogue_on_every_target(kernels_on, rng, target):
    cases, outs = [], []
    for case in S16_VEC_CASES:
        n, h, w, cin, cout, kh, kw, pad, stride, dil, ends, lo, big, shifts = case
        if ends:
            x = rng.choice(np.array([-32768, 32767], np.int16), (n, h, w, cin))
        else:
            x = rng.integers(-32768, 32767, (n, h, w, cin), endpoint=True, dtype=np.int16)
        wt = weights8(rng, (cout, kh, kw, cin))
        b = rng.integers(-(2**20), 2**20, cout, dtype=np.int64)
        if big is not None:
            b[big] = 2**40
        a = _attrs(pad, stride, dil, 0, 0)
        acc = conv2d.run([x, wt, b], a)
        block = requant_block16(rng, acc, lo, shifts)
        want = requant.reference(acc, block, True)
        outs.append(want)
        cases += [(f"{case} acc", lambda lib, x=x, wt=wt, b=b, a=a: lib.conv2d(x, wt, b, **a, requant=None), acc),
                  (f"{case} requant", lambda lib, x=x, wt=wt, b=b, a=a, r=block: lib.conv2d(x, wt, b, **a, requant=r),
                   want)]
    run_kernel_cases(kernels_on(target), cases)
    flat = np.concatenate([o.reshape(-1) for o in outs])
    assert (flat == 32767).any() and (flat == -32768).any() and ((flat > -32768) & (flat < 32767)).mean() > 0.5


# int16 x int8 with 32-bit accumulators (Helium: tabula_conv2d_s16_mve.h, taken when every sum provably fits
# int32, |bias| + 32768 sum |w| < 2^31, and every shift is in [17, 46]): 2 pixels x 2 output channels per
# pass over the NHWC rows (1x1, stride 1, no padding) or one output row's gathered fields, an odd last
# channel and pixel alone; rows of a multiple of 16 values (the unrolled loop) and not (the tail-predicated
# one).  Cases: Cin and Cout 1, 3, 7, 8, 9, 17 (channel tails), 16 / 32 (unrolled), odd pixel counts, the
# first conv of a MobileNet (1 channel, 3x3, stride 2, padding (0,1,0,1) and (1,1,1,1)), 1x1 with padding
# and stride 2 (gathered 1x1 fields), 3x3 over 8 channels, 2 batch items, a 1-pixel map, more than one
# tile of 64 channels (70), inputs at the int16 ends (outputs saturating at both ends), exact rounding
# ties (multiplier 2^14, shift 17: acc / 8, an eighth of them x.5), no bias, a clamp inside the range; then the fallbacks, still exact: a bias or weights that break the int32 bound, a
# row of 512 whose cheap bound fails but whose weights pass it (the fast path at its longest row), a
# shift of 16 or 47.
# (N, H, W, Cin, Cout, KH, KW, pad, stride, inputs: random / ends / small, block: random / ties / clamp,
#  bias: small / none / huge / bound / weights, shifts)
S16_FAST_CASES = [
    *[(1, 3, 5, cin, cout, 1, 1, (0, 0, 0, 0), (1, 1), "random", "random", "small", None)
      for cin, cout in ((1, 1), (3, 7), (7, 3), (8, 16), (9, 8), (17, 9), (16, 17), (32, 9), (8, 1))],
    (1, 3, 3, 16, 32, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "small", None),      # 9 pixels, ends
    (2, 2, 3, 32, 8, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "small", None),       # 2 batch items
    (1, 1, 1, 24, 70, 1, 1, (0, 0, 0, 0), (1, 1), "random", "random", "small", None),     # 1 pixel, 2 tiles
    (1, 4, 5, 64, 70, 1, 1, (0, 0, 0, 0), (1, 1), "random", "random", "small", None),     # 2 tiles
    (1, 9, 9, 1, 8, 3, 3, (0, 1, 0, 1), (2, 2), "random", "random", "small", None),       # first conv
    (1, 10, 7, 1, 9, 3, 3, (1, 1, 1, 1), (2, 2), "ends", "random", "small", None),        # first conv, pad 1
    (1, 6, 5, 3, 7, 3, 3, (1, 1, 1, 1), (1, 1), "random", "random", "small", None),
    (1, 5, 6, 8, 3, 3, 3, (1, 1, 1, 1), (2, 1), "ends", "random", "small", None),
    (1, 5, 5, 7, 17, 1, 1, (1, 0, 0, 1), (2, 2), "random", "random", "small", None),      # 1x1, pad, stride
    (1, 10, 10, 16, 9, 3, 3, (1, 1, 1, 1), (1, 1), "small", "ties", "small", None),      # K = 144, ties
    (1, 4, 5, 9, 6, 1, 1, (0, 0, 0, 0), (1, 1), "small", "ties", "none", None),          # no bias, ties
    (1, 5, 3, 48, 4, 1, 1, (0, 0, 0, 0), (1, 1), "random", "random", "small", None),      # K = 48
    (1, 4, 4, 8, 10, 3, 3, (1, 1, 1, 1), (1, 1), "ends", "clamp", "small", None),         # clamp in range
    (1, 3, 3, 512, 4, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "bound", None),       # K = 512 fast
    (1, 3, 3, 512, 4, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "weights", None),     # > int32: 64-bit
    (1, 3, 3, 8, 5, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "huge", None),          # bias near 2^31
    (1, 3, 5, 8, 6, 1, 1, (0, 0, 0, 0), (1, 1), "random", "random", "small", {2: 16}),    # shift 16
    (1, 3, 3, 3, 6, 3, 3, (1, 1, 1, 1), (1, 1), "random", "random", "small", {5: 47}),    # shift 47
]


def _s16_fast_case(rng, case):
    """x, w, b, attrs and the requant block of one S16_FAST_CASES case."""
    n, h, w, cin, cout, kh, kw, pad, stride, inputs, kind, bias, shifts = case
    shape = (n, h, w, cin)
    if inputs == "ends":
        x = rng.choice(np.array([-32768, 32767], np.int16), shape)
    elif inputs == "small":
        x = rng.integers(-40, 40, shape, endpoint=True, dtype=np.int16)
    elif inputs == "tiny":
        x = rng.integers(-2, 2, shape, endpoint=True, dtype=np.int16)
    else:
        x = rng.integers(-32768, 32767, shape, endpoint=True, dtype=np.int16)
    wt = weights8(rng, (cout, kh, kw, cin))
    b = rng.integers(-(2**20), 2**20, cout, dtype=np.int64)
    if bias == "none":
        b = None
    elif bias == "huge":
        b[1] = 2**31 - 5  # the bound fails: the 64-bit path
    elif bias == "bound":
        wt = rng.integers(-3, 3, wt.shape, endpoint=True).astype(np.int8)  # 512 << 22 is 2^31: summed, it fits
    elif bias == "weights":
        wt[2] = -128  # 32768 * 128 * 512 = 2^31: the bound fails, and the sums do leave int32
        x[..., :] = -32768
        b[2] = 1000
    a = _attrs(pad, stride, (1, 1), 0, 0)
    acc = conv2d.run([x, wt, np.zeros(cout, np.int64) if b is None else b], a)
    if kind == "ties":  # acc / 8 rounded half up; the bias small enough that it does not saturate
        acc = conv2d.run([x, wt, np.zeros(cout, np.int64) if b is None else b // 64], a)
        b = None if b is None else b // 64
        block = requant.pack(0, -32768, 32767, [2**14] * cout, [17] * cout)
    elif kind == "clamp":
        block = requant_block16(rng, acc)
        block = requant.pack(0, -1000, 6000, *[[int(v) for v in f] for f in _ms(block, cout)])
    else:
        block = requant_block16(rng, acc, -32768, shifts)
    return x, wt, b, a, acc, block


def _ms(block, cout):
    r = requant.unpack(block)
    return [r.multiplier[:cout], r.shift[:cout]]


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s16_int32_accumulators_on_every_target(kernels_on, rng, target):
    cases, outs, accs = [], [], []
    for case in S16_FAST_CASES:
        x, wt, b, a, acc, block = _s16_fast_case(rng, case)
        want = requant.reference(acc, block, True)
        outs.append((case, want))
        accs.append((case, acc))
        cases += [(f"{case} requant", lambda lib, x=x, wt=wt, b=b, a=a, r=block: lib.conv2d(x, wt, b, **a, requant=r),
                   want),
                  (f"{case} acc", lambda lib, x=x, wt=wt, b=b, a=a: lib.conv2d(x, wt, b, **a, requant=None), acc)]
    run_kernel_cases(kernels_on(target), cases)
    flat = np.concatenate([o.reshape(-1) for _, o in outs])
    assert (flat == 32767).any() and (flat == -32768).any() and ((flat > -32768) & (flat < 32767)).mean() > 0.5
    ties = np.concatenate([acc.reshape(-1) for case, acc in accs if case[10] == "ties"])
    assert ((ties % 8 == 4) & (np.abs(ties) < 8 * 32767)).sum() > 50  # exact ties of acc / 8, not saturated
    big = [acc for case, acc in accs if case[11] == "weights"][0]
    assert np.abs(big).max() >= 2**31  # the fallback case's sums really leave int32
    clamp = [o for case, o in outs if case[10] == "clamp"][0]
    assert clamp.min() == -1000 and clamp.max() == 6000


@pytest.mark.parametrize("target", kernel_targets("m4", "m4-noasm", "m33"))
def test_conv2d_dsp_path_wraps_like_the_portable_path(kernels_on, rng, target):
    """Sums beyond int32 (outside the IR contract, which proves they fit): bias 2^31 - 1000, then
    products (-128 - 127) * -127 = +32,385 at every tap of the even channels, random signs on the odd
    ones -- the DSP path wraps modulo 2^32 exactly as the portable path does, and so do the outputs
    requantized from the wrapped sums."""
    x = np.full((1, 4, 4, 12), -128, np.int8)
    w = rng.choice(np.array([-127, 127], np.int8), (6, 3, 3, 12))
    w[0::2] = -127
    bias = np.full(6, 2**31 - 1000, np.int32)
    rq = requant.pack(3, -128, 127, [2**30 + 12345] * 6, [40] * 6)
    a = _attrs((1, 1, 1, 1), (1, 1), (1, 1), 127, 0)
    got = {t: [kernels_on(t).conv2d(x, w, bias, **a, requant=r) for r in (None, rq)] for t in (target, "m4-portable")}
    for k in range(2):
        np.testing.assert_array_equal(got[target][k], got["m4-portable"][k])
    assert (got[target][0][..., 0::2] < 0).any()  # the even channels' sums did leave int32 and wrap


# ---- precision boundary: tabula_conv2d_s8_s16_folded ----------------------------------------------------
# The folded int8 conv requantized to int16 (a scheme=mixed boundary) in tiles of output rows through
# tabula_conv2d_s8_folded, on every target, bit-exact with the reference then RESCALE (int32 -> int16) then
# CLAMP: the 1x1 GEMM (kws's pointwise), 3x3 with padding, stride and dilation, channel tails, 1-pixel maps,
# tiles whose rows lie wholly in the padding, output rows wider than the tile (the portable loop), tiles of
# several rows with a short last tile, input zero points at the ends, end inputs; blocks with shifts and
# multipliers at their ends (edges), ties, random.
# (N, H, W, Cin, Cout, KH, KW, pad, stride, dilation, input_zp, weight_zp, block kind, end inputs)
CROSS_CASES = [
    (1, 25, 5, 64, 64, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), -128, 0, "random", False),        # kws's pointwise
    (1, 25, 5, 64, 64, 1, 1, (0, 0, 0, 0), (1, 1), (1, 1), 127, 0, "ties", True),
    *[(1, 5, 4, 7, c, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 9 * c - 40, 0, "random", False) for c in (*range(1, 10), 17)],
    (2, 7, 6, 5, 9, 3, 3, (1, 1, 1, 1), (2, 2), (2, 2), 3, 0, "edges", True),                 # stride, dilation
    (1, 1, 1, 15, 6, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 127, 0, "edges", True),               # 1-pixel map
    (1, 2, 30, 4, 20, 1, 1, (3, 3, 0, 0), (1, 1), (1, 1), -7, 0, "random", False),            # tiles in the padding
    (1, 3, 40, 8, 40, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 5, 0, "random", False),             # a row > the tile
    (1, 9, 7, 16, 24, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -1, 0, "ties", False),              # 6 rows per tile
    (1, 4, 5, 16, 8, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), -3, 0, "edges", False),
]


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s8_s16_folded_on_every_target(kernels_on, rng, target):
    from helpers import requant_block_cross

    cases, outs = [], []
    for case in CROSS_CASES:
        x, wt, b, a, kind = _path_case(rng, case)
        acc = conv2d.run([x, wt, b], a)
        block = requant_block_cross(rng, acc, False, kind)
        want = requant.reference(acc, block, False, "int16")
        outs.append(want)
        bf = folded_bias(wt, b, a["input_zp"])
        cases.append((str(case), lambda lib, x=x, wt=wt, bf=bf, a=a, r=block: lib.conv2d_folded(
            x, wt, bf, **_target_kws(a), pad_value=a["input_zp"], requant=r, out_dtype="int16"), want))
    run_kernel_cases(kernels_on(target), cases)
    flat = np.concatenate([o.reshape(-1) for o in outs])
    assert (flat == -32768).any() and (flat == 32767).any() and ((flat > -32768) & (flat < 32767)).mean() > 0.3


@pytest.mark.host
def test_conv2d_s8_s16_folded_refuses_a_missing_or_bad_block(kernel_lib, rng):
    from helpers import requant_block_cross

    from tabula.harness import host as kl

    x, wt, b, a, _ = _path_case(rng, (1, 4, 4, 3, 5, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), 2, 0, "random", False))
    bf = folded_bias(wt, b, a["input_zp"])
    acc = conv2d.run([x, wt, b], a)
    r = requant.unpack(requant_block_cross(rng, acc, False))
    call = lambda blk: kernel_lib.conv2d_folded(x, wt, bf, **_target_kws(a), pad_value=2, requant=blk,  # noqa: E731
                                                out_dtype="int16")
    ok = requant.pack(0, -32768, 32767, [2**15, *r.multiplier[1:]], r.shift)   # above int48's limit: allowed
    np.testing.assert_array_equal(call(ok), requant.reference(acc, ok, False, "int16"))
    for blk in (requant.pack(1, -32768, 32767, r.multiplier, r.shift),                 # int16 zero point
                requant.pack(0, -32769, 32767, r.multiplier, r.shift),
                requant.pack(0, -32768, 32768, r.multiplier, r.shift),
                requant.pack(0, -32768, 32767, [-1, *r.multiplier[1:]], r.shift),
                requant.pack(0, -32768, 32767, r.multiplier, [63, *r.shift[1:]])):
        with pytest.raises(kl.KernelError):
            call(blk)
    win = kl.KernelLib.window(x.shape, acc.shape[1:3], (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    out = np.full(acc.shape, 0x5A, np.int16)
    with pytest.raises(kl.KernelError):
        kernel_lib.call("tabula_conv2d_s8_s16_folded", win, 5, x, 2, wt, bf, None, out)
    assert (out == 0x5A).all()


# ---- precision boundary: tabula_conv2d_s16_s8 ------------------------------------------------------------
# The a16w8 conv requantized to int8 (a scheme=mixed boundary; the int8 zero point any), on every target,
# bit-exact with the reference then RESCALE (int48 -> int8) then CLAMP: Helium's 32-bit path (1x1 rows,
# channel tails, 2 batch items, the first conv 1 -> 8 3x3/2, 3x3 with padding, ties: multiplier 2^14 and
# shifts 17-19) and the portable loop it falls back to (edges: shifts 2, 33 and 62; a bias near 2^31).
# (N, H, W, Cin, Cout, KH, KW, pad, stride, inputs, block kind, bias)
S16_S8_CASES = [
    (1, 3, 5, 16, 17, 1, 1, (0, 0, 0, 0), (1, 1), "random", "random", "small"),
    (2, 2, 3, 32, 7, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "small"),
    (1, 3, 3, 9, 3, 1, 1, (0, 0, 0, 0), (1, 1), "tiny", "ties", "none"),
    (1, 9, 9, 1, 8, 3, 3, (0, 1, 0, 1), (2, 2), "random", "random", "small"),
    (1, 7, 6, 3, 9, 3, 3, (1, 1, 1, 1), (1, 1), "tiny", "ties", "none"),
    (1, 6, 5, 3, 9, 3, 3, (1, 1, 1, 1), (1, 1), "ends", "edges", "small"),
    (1, 3, 3, 8, 5, 1, 1, (0, 0, 0, 0), (1, 1), "ends", "random", "huge"),
]


@pytest.mark.parametrize("target", kernel_targets())
def test_conv2d_s16_s8_on_every_target(kernels_on, rng, target):
    from helpers import requant_block_cross

    cases, outs, ties = [], [], []
    for case in S16_S8_CASES:
        x, wt, b, a, acc, _ = _s16_fast_case(rng, (*case[:10], "random", case[11], None))
        block = requant_block_cross(rng, acc, True, case[10])
        want = requant.reference(acc, block, True, "int8")
        outs.append(want)
        if case[10] == "ties":
            ties.append(acc.reshape(-1))
        cases.append((str(case), lambda lib, x=x, wt=wt, b=b, a=a, r=block: lib.conv2d(
            x, wt, b, **a, requant=r, out_dtype="int8"), want))
    run_kernel_cases(kernels_on(target), cases)
    flat = np.concatenate([o.reshape(-1) for o in outs])
    assert flat.dtype == np.int8 and (flat == -128).any() and (flat == 127).any()
    assert ((flat > -128) & (flat < 127)).mean() > 0.3
    assert (np.concatenate(ties) % 8 == 4).sum() > 10  # exact ties of acc / 8 (shift 17) went through the rounding


@pytest.mark.host
def test_conv2d_s16_s8_refuses_a_missing_or_bad_block(kernel_lib, rng):
    from helpers import requant_block_cross

    from tabula.harness import host as kl

    x, wt, b, a, acc, _ = _s16_fast_case(rng, (1, 4, 4, 3, 5, 3, 3, (1, 1, 1, 1), (1, 1), "random", "random",
                                               "small", None))
    r = requant.unpack(requant_block_cross(rng, acc, True))
    call = lambda blk: kernel_lib.conv2d(x, wt, b, **a, requant=blk, out_dtype="int8")  # noqa: E731
    ok = requant.pack(-128, -128, 127, r.multiplier, r.shift)  # an int8 zero point at its end: allowed
    np.testing.assert_array_equal(call(ok), requant.reference(acc, ok, True, "int8"))
    for blk in (requant.pack(128, -128, 127, r.multiplier, r.shift),
                requant.pack(0, -129, 127, r.multiplier, r.shift),
                requant.pack(0, -128, 128, r.multiplier, r.shift),
                requant.pack(0, -128, 127, [2**15, *r.multiplier[1:]], r.shift),   # int48's multiplier limit
                requant.pack(0, -128, 127, r.multiplier, [63, *r.shift[1:]])):
        with pytest.raises(kl.KernelError):
            call(blk)
    win = kl.KernelLib.window(x.shape, acc.shape[1:3], (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    out = np.full(acc.shape, 0x5A, np.int8)
    with pytest.raises(kl.KernelError):
        kernel_lib.call("tabula_conv2d_s16_s8", win, 5, x, wt, 0, b, None, out)
    assert (out == 0x5A).all()
