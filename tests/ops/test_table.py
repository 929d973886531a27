"""TABLE int8: C == reference == the table itself over all 256 codes; random shapes; a real
activation table; the int16 reference (interpolating 513-entry table) at its grid points."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.qmath import build_table_int8
from tabula.reference.ops import table

ALL_CODES = np.arange(-128, 128, dtype=np.int8)


@pytest.mark.host
def test_all_256_codes(kernel_lib, rng):
    t = rng.integers(-128, 127, 256, endpoint=True, dtype=np.int8)
    np.testing.assert_array_equal(table.run([ALL_CODES, t], {}), t)  # out[c + 128] = table[c + 128]
    np.testing.assert_array_equal(kernel_lib.table(ALL_CODES, t), t)
    # reversed codes pick the reversed table; -128 -> entry 0, 127 -> entry 255
    np.testing.assert_array_equal(kernel_lib.table(ALL_CODES[::-1], t), t[::-1])
    assert kernel_lib.table(np.array([-128, 127], np.int8), t).tolist() == [t[0], t[255]]


@pytest.mark.host
def test_random_shapes_and_sigmoid_table(kernel_lib, rng):
    t = build_table_int8(lambda v: 1 / (1 + np.exp(-v)), 0.05, -3, 1 / 256, -128)
    for shape in [(0,), (1,), (3, 5), (2, 3, 4, 5)]:
        x = rng.integers(-128, 127, shape, endpoint=True, dtype=np.int8)
        want = table.run([x, t], {})
        assert want.dtype == np.int8 and want.shape == shape
        np.testing.assert_array_equal(kernel_lib.table(x, t), want)
    assert np.all(np.diff(t.astype(int)) >= 0)  # sigmoid is monotone: the table is too


@pytest.mark.host
def test_c_rejects_negative_count(kernel_lib):
    import kernel_lib as kl

    x = np.zeros(4, np.int8)
    assert kernel_lib.lib.tabula_table_s8(x.ctypes.data_as(kl._i8p), -1, x.ctypes.data_as(kl._i8p),
                                          x.ctypes.data_as(kl._i8p)) == kl.TABULA_ERR_ARG


def test_int16_reference_interpolates(rng):
    t = rng.integers(-16000, 16000, 513).astype(np.int16)
    grid = (np.arange(512) * 128 - 32768).astype(np.int16)
    got = table.run([grid, t], {})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, t[:512].astype(np.int32) << 7)  # on the grid: the entry, 16.7
    x = (grid + 64).astype(np.int16)  # half-way: the mean of the neighbours, in 16.7
    np.testing.assert_array_equal(table.run([x, t], {}), (t[:512].astype(np.int32) << 7) + (np.diff(t.astype(np.int32)) * 64))
    np.testing.assert_array_equal(table.run([np.array([32767], np.int16), t], {}), [(int(t[511]) << 7) + (int(t[512]) - int(t[511])) * 127])


def test_reference_rejects_bad_table():
    with pytest.raises(ValueError, match="256"):
        table.run([ALL_CODES, np.zeros(255, np.int8)], {})
    with pytest.raises(ValueError, match="513"):
        table.run([np.zeros(3, np.int16), np.zeros(256, np.int16)], {})
