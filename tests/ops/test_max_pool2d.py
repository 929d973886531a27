"""MAX_POOL2D int8: C == reference (tolerance 0), reference == torch max_pool2d, padding never wins,
argument errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers import int8, kernel_targets, run_kernel_cases
from tabula.reference.ops import max_pool2d

# name: (N, H, W, C, kernel, stride, pad [t,b,l,r])
CASES = {
    "2x2_s2": (1, 8, 8, 3, (2, 2), (2, 2), (0, 0, 0, 0)),
    "3x3_s2_pad1": (2, 9, 7, 4, (3, 3), (2, 2), (1, 1, 1, 1)),
    "3x3_s1_same": (1, 5, 6, 16, (3, 3), (1, 1), (1, 1, 1, 1)),
    "nonsquare_asym_pad": (1, 7, 10, 5, (2, 4), (1, 3), (1, 0, 3, 2)),
    "kernel_covers_all": (1, 3, 3, 2, (3, 3), (1, 1), (2, 2, 2, 2)),
    "1x1_s3": (1, 7, 7, 1, (1, 1), (3, 3), (0, 0, 0, 0)),
}


def _attrs(kernel, stride, pad) -> dict:
    return {"kernel": list(kernel), "stride": list(stride), "pad": list(pad)}


@pytest.mark.host
@pytest.mark.parametrize("name", CASES)
def test_c_equals_reference(kernel_lib, rng, name):
    n, h, w, c, k, s, p = CASES[name]
    for x in (rng.integers(-128, 127, (n, h, w, c), endpoint=True, dtype=np.int8),
              rng.integers(-128, -100, (n, h, w, c), endpoint=True, dtype=np.int8)):
        want = max_pool2d.run([x], _attrs(k, s, p))
        got = kernel_lib.max_pool2d(x, kernel=k, stride=s, pad=p)
        assert got.dtype == np.int8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", CASES)
def test_reference_equals_torch(rng, name):
    n, h, w, c, k, s, p = CASES[name]
    x = rng.integers(-128, 127, (n, h, w, c), endpoint=True, dtype=np.int8)
    xt = torch.from_numpy(x.astype(np.float64)).permute(0, 3, 1, 2)
    xt = F.pad(xt, (p[2], p[3], p[0], p[1]), value=-torch.inf)
    want = F.max_pool2d(xt, k, s).permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal(max_pool2d.run([x], _attrs(k, s, p)).astype(np.float64), want)


@pytest.mark.host
@pytest.mark.parametrize("value", [-128, -100, -1, 127])
def test_padding_never_wins(kernel_lib, value):
    x = np.full((1, 4, 5, 3), value, dtype=np.int8)
    a = _attrs((3, 3), (1, 1), (2, 2, 2, 2))
    want = np.full((1, 6, 7, 3), value, dtype=np.int8)  # a zero (or any other) padding would show up
    np.testing.assert_array_equal(max_pool2d.run([x], a), want)
    np.testing.assert_array_equal(kernel_lib.max_pool2d(x, kernel=(3, 3), stride=(1, 1), pad=(2, 2, 2, 2)), want)


@pytest.mark.parametrize("k, s, p", [((2, 2), (1, 1), (2, 0, 0, 0)), ((2, 2), (1, 1), (0, 0, 0, 2)),
                                     ((2, 2), (0, 1), (0, 0, 0, 0))])
def test_reference_rejects(k, s, p):
    with pytest.raises(ValueError, match="MAX_POOL2D"):
        max_pool2d.run([np.zeros((1, 4, 4, 1), np.int8)], _attrs(k, s, p))


@pytest.mark.host
@pytest.mark.parametrize("field, value", [("pad_top", 2), ("pad_left", -1), ("dilation_y", 2), ("stride_x", 0),
                                          ("out_h", 9), ("kernel_h", 0), ("n", 0)])
def test_c_rejects(kernel_lib, field, value):
    import ctypes

    from tabula.harness import host as kl

    x = np.zeros((1, 4, 4, 2), np.int8)
    out = np.zeros((1, 16, 16, 2), np.int8)
    win = kl.KernelLib.window(x.shape, (3, 3), (2, 2), (1, 1), (1, 1), (0, 0, 0, 0))
    call = lambda: kernel_lib.lib.tabula_max_pool2d_s8(ctypes.byref(win), x.ctypes.data_as(kl._i8p),  # noqa: E731
                                                       out.ctypes.data_as(kl._i8p))
    assert call() == kl.TABULA_OK
    setattr(win, field, value)
    assert call() == kl.TABULA_ERR_ARG


# --- int16 (tabula_max_pool2d_s16) --------------------------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("name", CASES)
def test_s16_c_equals_reference_equals_torch(kernel_lib, rng, name):
    n, h, w, c, k, s, p = CASES[name]
    for x in (rng.integers(-32768, 32767, (n, h, w, c), endpoint=True, dtype=np.int16),
              rng.integers(-32768, -32700, (n, h, w, c), endpoint=True, dtype=np.int16)):
        want = max_pool2d.run([x], _attrs(k, s, p))
        assert want.dtype == np.int16
        np.testing.assert_array_equal(kernel_lib.max_pool2d(x, kernel=k, stride=s, pad=p), want)
        xt = F.pad(torch.from_numpy(x.astype(np.float64)).permute(0, 3, 1, 2), (p[2], p[3], p[0], p[1]), value=-torch.inf)
        np.testing.assert_array_equal(want.astype(np.float64), F.max_pool2d(xt, k, s).permute(0, 2, 3, 1).numpy())


@pytest.mark.host
@pytest.mark.parametrize("value", [-32768, -129, 0, 32767])
def test_s16_padding_never_wins(kernel_lib, value):
    x = np.full((1, 4, 5, 3), value, dtype=np.int16)
    want = np.full((1, 6, 7, 3), value, dtype=np.int16)
    np.testing.assert_array_equal(max_pool2d.run([x], _attrs((3, 3), (1, 1), (2, 2, 2, 2))), want)
    np.testing.assert_array_equal(kernel_lib.max_pool2d(x, kernel=(3, 3), stride=(1, 1), pad=(2, 2, 2, 2)), want)


@pytest.mark.host
@pytest.mark.parametrize("field, value", [("pad_top", 2), ("pad_left", -1), ("dilation_x", 2), ("stride_y", 0),
                                          ("out_w", 9), ("kernel_w", 0), ("c", 0)])
def test_s16_c_rejects(kernel_lib, field, value):
    import ctypes

    from tabula.harness import host as kl

    x = np.zeros((1, 4, 4, 2), np.int16)
    out = np.zeros((1, 16, 16, 2), np.int16)
    win = kl.KernelLib.window(x.shape, (3, 3), (2, 2), (1, 1), (1, 1), (0, 0, 0, 0))
    call = lambda: kernel_lib.lib.tabula_max_pool2d_s16(ctypes.byref(win), x.ctypes.data_as(kl._i16p),  # noqa: E731
                                                        out.ctypes.data_as(kl._i16p))
    assert call() == kl.TABULA_OK
    setattr(win, field, value)
    assert call() == kl.TABULA_ERR_ARG


# Helium (int8, 16 channels per vector) and the portable path on the emulated M55, and the M4: channel
# tails of 1..15 past full vectors, one channel, windows with only one real tap (the rest padding),
# the int8 ends.
DEVICE_CASES = {**CASES,
                "c17_tail": (1, 6, 5, 17, (3, 3), (1, 1), (1, 1, 1, 1)),
                "c33_s2": (2, 7, 8, 33, (2, 3), (2, 2), (0, 1, 1, 1)),
                "c15_one_tap_corners": (1, 2, 2, 15, (3, 3), (1, 1), (2, 2, 2, 2)),
                "c64_1d_window": (1, 1, 12, 64, (1, 3), (1, 1), (0, 0, 1, 1)),
                "c1": (1, 5, 5, 1, (3, 3), (2, 2), (1, 1, 1, 1))}


@pytest.mark.parametrize("target", kernel_targets("m55", "m55-portable", "m4"))
def test_max_pool2d_s8_on_device(kernels_on, rng, target):
    cases = []
    for name, (n, h, w, c, k, s, p) in DEVICE_CASES.items():
        for edges in (False, True):
            x = int8(rng, (n, h, w, c), edges)
            want = max_pool2d.run([x], _attrs(k, s, p))
            cases.append((f"{name} edges={edges}", lambda lib, x=x, k=k, s=s, p=p: lib.max_pool2d(x, kernel=k, stride=s, pad=p),
                          want))
    run_kernel_cases(kernels_on(target), cases)
