"""RESHAPE: the reference keeps row-major element order (no C kernel: the device aliases the buffer)."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.reference.ops import reshape


def test_reshape_keeps_element_order():
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    y = reshape.run([x[:, ::-1]], {"shape": [4, 6], "output_dtype": "int16"})  # non-contiguous input too
    assert y.shape == (4, 6) and y.dtype == np.int16
    np.testing.assert_array_equal(y.ravel(), x[:, ::-1].ravel())


def test_reshape_rejects_wrong_count():
    with pytest.raises(ValueError, match="RESHAPE"):
        reshape.run([np.zeros((2, 3), np.int8)], {"shape": [4, 2]})
