"""GREATER_EQUAL: C == reference == numpy '>=' (an int8 mask) on random shapes that broadcast (ranks 1..6, merged as codegen
merges them and not), every pair of the dtype's extremes; the contract's and the C kernel's refusals."""
from __future__ import annotations

import numpy as np
import pytest

from elementwise_kernels import check_binary, check_binary_refusals
from tabula.reference.ops import greater_equal as spec


@pytest.mark.host
@pytest.mark.parametrize("dtype", ["int32"])
def test_random_and_extreme_operands(kernel_lib, rng, dtype):
    check_binary(kernel_lib, rng, "GREATER_EQUAL", "greater_equal", dtype, lambda a, b: a >= b)


@pytest.mark.host
def test_ties_of_small_codes(kernel_lib, rng):
    """Operands from [-3, 3]: most pairs tie or differ by one."""
    check_binary(kernel_lib, rng, "GREATER_EQUAL", "greater_equal", "int32", lambda a, b: a >= b,
                 values=lambda shape: rng.integers(-3, 4, shape).astype(np.int32))


@pytest.mark.host
def test_c_refuses_shapes_that_do_not_broadcast(kernel_lib):
    check_binary_refusals(kernel_lib, "greater_equal", "int32", np.int8)


def test_contract():
    with pytest.raises(ValueError, match="broadcast"):
        spec.run([np.zeros((2, 3), np.int32), np.zeros((3, 2), np.int32)], {})
    with pytest.raises(ValueError, match="dtypes"):
        spec.run([np.zeros(3, np.int32), np.zeros(3, np.int64)], {})
