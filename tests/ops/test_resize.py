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
