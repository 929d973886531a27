"""TRANSPOSE_CONV2D int8 x int8 -> int32 and int16 x int8 -> int48: C tabula_transpose_conv2d_s8/_s16 ==
reference (tolerance 0) == PyTorch's float64 conv_transpose2d, on random codes with zero points at the int8
ends, strides 1-3, kernels smaller and larger than the stride, out_pad negative (PyTorch's padding) and
positive, channel counts 1 to 17 (the vector tails), a 1x1 input; the contract's refusals; the bound."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tabula.reference.ops import transpose_conv2d as tc

# (N, IH, IW, Cin, Cout, KH, KW, sy, sx, out_pad, input_zp)
CASES = [(1, 1, 1, 1, 1, 1, 1, 1, 1, [0, 0, 0, 0], 0), (1, 4, 5, 3, 2, 2, 2, 2, 2, [0, 0, 0, 0], -128),
         (2, 3, 4, 17, 5, 3, 3, 2, 2, [-1, 0, -1, 0], 127), (1, 5, 3, 16, 16, 4, 4, 2, 2, [-1, -1, -1, -1], 7),
         (1, 3, 3, 4, 3, 3, 2, 1, 3, [0, 2, 1, 0], -9), (1, 2, 6, 15, 1, 1, 3, 3, 1, [-0, 1, -2, -2], 100),
         (1, 4, 4, 8, 9, 5, 5, 3, 3, [-2, -1, -2, 0], -50)]


def _c(kernel_lib, x, w, b, attrs):
    out_t = tc.contract([tc.TType(x.shape, "int8" if x.dtype == np.int8 else "int16"), tc.TType(w.shape, "int8"),
                         tc.TType(b.shape, "int32" if x.dtype == np.int8 else "int48")], attrs)
    acc = np.int32 if x.dtype == np.int8 else np.int64
    out = np.full(out_t.shape, 0x5A5A5A, acc)
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    pt, _, pl, _ = attrs["out_pad"]
    sfx = "s8" if x.dtype == np.int8 else "s16"
    kernel_lib.call(f"tabula_transpose_conv2d_{sfx}", n, ih, iw, ic, out.shape[1], out.shape[2], oc, kh, kw,
                    *attrs["stride"], pt, pl, x, attrs.get("input_zp", 0), w, attrs.get("weight_zp", 0), b, out)
    return out


def _torch(x, w, attrs):
    """PyTorch's conv_transpose2d in float64 (NCHW, stride, no padding), cropped / zero-padded by out_pad."""
    pt, pb, pl, pr = attrs["out_pad"]
    xz = torch.from_numpy(x.astype(np.float64) - attrs.get("input_zp", 0)).permute(0, 3, 1, 2)
    wt = torch.from_numpy(w.astype(np.float64) - attrs.get("weight_zp", 0)).permute(3, 0, 1, 2)  # [Cin, Cout, KH, KW]
    y = torch.nn.functional.conv_transpose2d(xz, wt, stride=attrs["stride"]).permute(0, 2, 3, 1).numpy()
    return tc._crop(tc._crop(y, pt, pb, 1), pl, pr, 2)


@pytest.mark.host
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_c_equals_reference_equals_torch(kernel_lib, rng, case, dtype):
    n, ih, iw, ic, oc, kh, kw, sy, sx, out_pad, izp = case
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (n, ih, iw, ic), endpoint=True, dtype=dtype)
    w = rng.integers(-127, 127, (oc, kh, kw, ic), endpoint=True, dtype=np.int8)
    b = rng.integers(-5000, 5000, oc).astype(np.int32 if dtype == np.int8 else np.int64)
    attrs = {"out_pad": out_pad, "stride": [sy, sx], "input_zp": izp if dtype == np.int8 else 0, "weight_zp": 0}
    want = tc.run([x, w, b], attrs)
    np.testing.assert_array_equal(want.astype(np.float64), _torch(x, w, attrs) + b.astype(np.float64))
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, attrs), want)


@pytest.mark.host
def test_s8_weight_zero_point_and_the_int32_end(kernel_lib):
    """weight_zp != 0 (the contract allows it) and a sum at the int32 end: 255 * 255 per product."""
    taps = 2**31 // 65025  # 33025 products per output fit int32
    x = np.full((1, 1, 1, taps), -128, np.int8)
    w = np.full((2, 1, 1, taps), -128, np.int8)
    w[1] = 127
    b = np.zeros(2, np.int32)
    attrs = {"out_pad": [0, 0, 0, 0], "stride": [1, 1], "input_zp": 127, "weight_zp": 127}
    want = tc.run([x, w, b], attrs)
    assert int(want[0, 0, 0, 0]) == taps * 65025 and int(want[0, 0, 0, 1]) == 0
    np.testing.assert_array_equal(_c(kernel_lib, x, w, b, attrs), want)


def test_contract_refusals_and_the_phase_bound():
    x, w, b = tc.TType((1, 4, 4, 3), "int8"), tc.TType((2, 3, 3, 3), "int8"), tc.TType((2,), "int32")
    assert tc.contract([x, w, b], {"out_pad": [-1, 0, -1, 0], "stride": [2, 2]}).shape == (1, 8, 8, 2)
    with pytest.raises(ValueError, match="out_pad"):
        tc.contract([x, w, b], {"out_pad": [-3, 0, 0, 0], "stride": [2, 2]})
    with pytest.raises(ValueError, match="TRANSPOSE_CONV2D"):
        tc.contract([x, tc.TType((2, 3, 3, 4), "int8"), b], {"out_pad": [0, 0, 0, 0], "stride": [1, 1]})
    wv = np.ones((2, 3, 3, 3), np.int8)
    # stride 2, kernel 3: an output pixel gets at most 2 x 2 taps x 3 channels, not all 27
    reach = tc.bound([x, w, b], {"out_pad": [0, 0, 0, 0], "stride": [2, 2], "input_zp": -128}, [None, wv, np.array([5, -7])]).reach
    assert reach.tolist() == [255 * 12 + 5, 255 * 12 + 7]
