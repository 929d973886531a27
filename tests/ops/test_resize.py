"""RESIZE nearest (integer upscaling): C == Python reference == torch upsample_nearest2d."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tabula.reference.ops import resize


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("scale", [(1, 1), (2, 2), (2, 3), (3, 1)])
def test_resize_nearest_matches_torch(kernel_lib, rng, dtype, scale):
    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (2, 3, 4, 5), dtype=dtype, endpoint=True)
    ref = resize.run([x], {"mode": "NEAREST", "scale": list(scale)})
    nchw = torch.from_numpy(x.astype(np.float32)).permute(0, 3, 1, 2)
    oracle = torch.nn.functional.interpolate(nchw, scale_factor=scale, mode="nearest").permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal(ref, oracle.astype(dtype))
    np.testing.assert_array_equal(kernel_lib.resize_nearest(x, scale), ref)


def test_resize_rejects_non_integer_or_bad_mode():
    with pytest.raises(ValueError, match="RESIZE"):
        resize.run([np.zeros((1, 2, 2, 1), np.int8)], {"mode": "BILINEAR", "scale": [2, 2]})


# ---- BILINEAR ----------------------------------------------------------------------------------------
def _bilinear_attrs(h, w, oh, ow, align, factor=None):
    """The RESIZE BILINEAR attributes tabula's lowering derives for PyTorch's upsample_bilinear2d."""
    from tabula.lowering.ops.upsample import _bilinear_axis

    (ny, dy, oy, by), (nx, dx, ox, bx) = _bilinear_axis(h, oh, align, factor), _bilinear_axis(w, ow, align, factor)
    return {"mode": "BILINEAR", "scale": [ny, dy, nx, dx], "offset": [oy, ox], "border": [by, bx]}


def _bilinear_c(kernel_lib, x, attrs, out_shape):
    acc = np.int32 if x.dtype == np.int8 else np.int64
    out = np.full(out_shape, 0x5A5A5A, acc)
    sfx = "s8" if x.dtype == np.int8 else "s16"
    n, h, w, c = x.shape
    kernel_lib.call(f"tabula_resize_bilinear_{sfx}", x, n, h, w, c, out_shape[1], out_shape[2], *attrs["scale"],
                    *attrs["offset"], out)
    return out


# (H, W, OH, OW, align_corners, scale_factor)
BILINEAR = [(4, 5, 8, 10, False, 2.0), (3, 3, 6, 6, True, None), (5, 7, 9, 13, True, None), (4, 4, 12, 12, False, 3.0),
            (6, 5, 3, 5, False, None), (5, 6, 7, 11, False, None), (1, 3, 2, 6, False, 2.0), (2, 2, 1, 1, True, None),
            (8, 8, 4, 4, True, None)]


@pytest.mark.host
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("case", BILINEAR, ids=str)
def test_resize_bilinear_c_equals_reference_equals_torch(kernel_lib, rng, dtype, case):
    """TOSA's integer sum over n_y * n_x equals PyTorch's float interpolation of the codes (align_corners
    both ways, up and down, integer and fractional factors, size-1 axes); C equals the reference."""
    h, w, oh, ow, align, factor = case
    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (2, h, w, 3), dtype=dtype, endpoint=True)
    x.flat[:3] = np.iinfo(dtype).min  # the ends: the exact sum reaches |code| * n_y * n_x
    x.flat[3:6] = np.iinfo(dtype).max
    attrs = _bilinear_attrs(h, w, oh, ow, align, factor)
    want = resize.run([x], attrs)
    assert want.shape == (2, oh, ow, 3) and want.dtype == (np.int32 if dtype == np.int8 else np.int64)
    nchw = torch.from_numpy(x.astype(np.float64)).permute(0, 3, 1, 2)
    kw = {"scale_factor": factor} if factor else {"size": (oh, ow)}
    oracle = torch.nn.functional.interpolate(nchw, mode="bilinear", align_corners=align, **kw).permute(0, 2, 3, 1).numpy()
    ny, _, nx, _ = attrs["scale"]
    np.testing.assert_allclose(want / (ny * nx), oracle, rtol=0, atol=1e-9 * np.abs(oracle).max())
    np.testing.assert_array_equal(_bilinear_c(kernel_lib, x, attrs, want.shape), want)


def test_resize_bilinear_contract():
    base = {"mode": "BILINEAR", "scale": [4, 2, 4, 2], "offset": [-1, -1], "border": [1, 1]}
    assert resize.contract([resize.TType((1, 3, 5, 2), "int16")], base) == resize.TType((1, 6, 10, 2), "int48")
    for bad in ({"border": [0, 1]}, {"scale": [4096, 2, 4, 2]}, {"offset": [-5, -1]}):
        with pytest.raises(ValueError, match="RESIZE"):
            resize.contract([resize.TType((1, 3, 5, 2), "int8")], {**base, **bad})
