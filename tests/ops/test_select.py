"""SELECT: C == reference == numpy ``where`` for int8 / int16 / int32 operands, every broadcast pattern of
condition and operands (ranks 1..6), masks of 0 / 1 and other non-zero codes; the contract's refusals."""
from __future__ import annotations

import numpy as np
import pytest

from elementwise_kernels import ERR_ARG, OK, select
from tabula import dtypes
from tabula.reference.ops import select as spec


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32"])
def test_random_broadcasting_operands(kernel_lib, rng, dtype):
    lo, hi = dtypes.range_of(dtype)
    npt = dtypes.get(dtype).np
    cases = [((5,), (5,), (5,)), ((1,), (5,), (5,)), ((5,), (1,), (5,)), ((5,), (5,), (1,)), ((3, 1), (1, 4), (3, 4)),
             ((2, 3, 4, 5), (2, 1, 4, 1), (1, 3, 1, 5)), ((1, 2, 1, 3, 1, 2), (2, 1, 3, 1, 2, 1), (1, 1, 1, 1, 1, 1))]
    for sc, sa, sb in cases:
        c = rng.integers(0, 2, sc).astype(np.int8)
        a, b = (rng.integers(lo, hi, s, endpoint=True, dtype=np.int64).astype(npt) for s in (sa, sb))
        want = spec.run([c, a, b], {})
        np.testing.assert_array_equal(want, np.where(c != 0, a, b))
        st, got = select(kernel_lib, c, a, b)
        assert st == OK
        np.testing.assert_array_equal(got, want)


@pytest.mark.host
def test_any_non_zero_condition_is_true(kernel_lib):
    c = np.array([0, 1, -1, 127, -128, 0], np.int8)
    a, b = np.arange(6, dtype=np.int16), -np.arange(6, dtype=np.int16)
    st, got = select(kernel_lib, c, a, b)
    assert st == OK
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, -5])
    np.testing.assert_array_equal(spec.run([c, a, b], {}), got)


@pytest.mark.host
def test_c_refuses_bad_shapes(kernel_lib):
    c, a = np.zeros(6, np.int8), np.zeros(6, np.int8)
    assert select(kernel_lib, c, a, a, rank_shapes=([2, 3], [3, 2], [2, 3]))[0] == ERR_ARG
    assert select(kernel_lib, c, a, a, rank_shapes=([6], [-1], [6]))[0] == ERR_ARG


def test_contract():
    m = np.zeros(3, np.int8)
    with pytest.raises(ValueError, match="mask"):
        spec.run([m.astype(np.int16), m, m], {})
    with pytest.raises(ValueError, match="alike"):
        spec.run([m, m, m.astype(np.int16)], {})
    with pytest.raises(ValueError, match="broadcast"):
        spec.run([m, np.zeros(2, np.int8), m], {})
