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
    from tabula.harness import host as kl

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


# ---- int16: C kernel (tabula_table_s16) == reference == qmath's interpolation, all 65,536 codes ----
ALL_CODES_16 = np.arange(-32768, 32768, dtype=np.int16)


def _walk(rng, extreme_share: float) -> np.ndarray:
    """A 513-entry table as a walk whose steps are the int16 slope limits (-32768 or +32767, whichever
    stays in range) with probability ``extreme_share``, else random steps clipped into range."""
    t = [int(rng.integers(-32768, 32767, endpoint=True))]
    for _ in range(512):
        cur = t[-1]
        if rng.random() < extreme_share:
            step = -32768 if cur >= 0 else 32767
        else:
            step = int(rng.integers(-32768, 32767, endpoint=True))
        t.append(min(max(cur + step, -32768), 32767))
    return np.array(t, dtype=np.int16)


def _extreme_tables(rng) -> list[np.ndarray]:
    """Tables whose slopes reach both int16 limits (-32768 and +32767), random walks, constant tables at
    both ends of the range and a monotone random table."""
    return [_walk(rng, 1.0), _walk(rng, 0.5), _walk(rng, 0.0), np.full(513, -32768, np.int16),
            np.full(513, 32767, np.int16), np.sort(rng.integers(-32768, 32767, 513, endpoint=True)).astype(np.int16)]


@pytest.mark.host
def test_int16_all_codes_c_equals_reference(kernel_lib, rng):
    from tabula.qmath import table_interpolate_int16

    tables = _extreme_tables(rng)
    assert any(np.diff(t.astype(int)).min() == -32768 for t in tables)
    assert any(np.diff(t.astype(int)).max() == 32767 for t in tables)
    for t in tables:
        want = table.run([ALL_CODES_16, t], {})
        assert want.dtype == np.int32
        np.testing.assert_array_equal(kernel_lib.table(ALL_CODES_16, t), want)
        np.testing.assert_array_equal(table_interpolate_int16(t, ALL_CODES_16), want)
    x = rng.integers(-32768, 32767, (2, 3, 7), endpoint=True, dtype=np.int16)  # any shape, any order
    np.testing.assert_array_equal(kernel_lib.table(x, tables[-1]), table.run([x, tables[-1]], {}))


@pytest.mark.host
def test_int16_extremes_hand_checked(kernel_lib):
    t = np.zeros(513, np.int16)
    t[511], t[512] = 32767, -1  # slope -32768 at the last segment
    t[0], t[1] = -32768, -1  # slope +32767 at the first
    x = np.array([-32768, -32767, -32641, 32640, 32767], np.int16)
    want = [-32768 * 128, -32768 * 128 + 32767, -32768 * 128 + 32767 * 127, 32767 * 128, 32767 * 128 - 32768 * 127]
    np.testing.assert_array_equal(table.run([x, t], {}), want)
    np.testing.assert_array_equal(kernel_lib.table(x, t), want)


@pytest.mark.host
def test_int16_slope_outside_int16_is_rejected(kernel_lib):
    from tabula.harness import host as kl

    t = np.zeros(513, np.int16)
    t[100], t[101] = 32767, -32768  # slope -65535: TOSA REQUIRE fails
    with pytest.raises(ValueError, match="slope"):
        table.run([ALL_CODES_16, t], {})
    x = np.array([100 * 128 - 32768 + 5], np.int16)  # an element in that segment
    with pytest.raises(kl.KernelError):
        kernel_lib.table(x, t)
    ok = np.array([0], np.int16)  # elsewhere the kernel is fine (it checks the slopes it meets)
    assert kernel_lib.table(ok, t).tolist() == [0]


@pytest.mark.host
def test_int16_c_rejects_negative_count(kernel_lib):
    import ctypes as C

    from tabula.harness import host as kl

    x, t, out = np.zeros(4, np.int16), np.zeros(513, np.int16), np.zeros(4, np.int32)
    p16 = C.POINTER(C.c_int16)
    assert kernel_lib.lib.tabula_table_s16(x.ctypes.data_as(p16), -1, t.ctypes.data_as(p16),
                                           out.ctypes.data_as(kl._i32p)) == kl.TABULA_ERR_ARG
