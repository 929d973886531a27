"""tabula.harness.host: any manifest kernel is called by name with numpy arrays, its arguments typed by its
prototype (const inputs converted, outputs checked, NULL, windows, pointer tables); a wrong argument count
or output type is refused before the call."""
from __future__ import annotations

import numpy as np
import pytest

from tabula import kernels
from tabula.harness.host import TABULA_ERR_ARG, TABULA_OK, KernelError


@pytest.mark.host
def test_any_kernel_by_name_with_numpy_arrays(kernel_lib):
    x = [-5, 0, 3, 120]                                    # a list: converted to the const int8_t * input
    out = np.zeros(4, np.int8)
    kernel_lib.call("tabula_clamp_s8", x, 4, -3, 9, out)
    assert out.tolist() == [-3, 0, 3, 9]
    assert kernel_lib.status("tabula_clamp_s8", x, 4, 9, -3, out) == TABULA_ERR_ARG
    with pytest.raises(KernelError) as e:
        kernel_lib.call("tabula_clamp_s8", x, 4, 9, -3, out)
    assert e.value.status == TABULA_ERR_ARG
    assert kernel_lib.status("tabula_clamp_s8", x, 0, 0, 0, out) == TABULA_OK


@pytest.mark.host
def test_arguments_are_checked_against_the_prototype(kernel_lib):
    with pytest.raises(TypeError, match="takes 5 arguments"):
        kernel_lib.call("tabula_clamp_s8", [1], 1, 0, 0)
    with pytest.raises(TypeError, match="int8"):          # an output of another type is not converted
        kernel_lib.call("tabula_clamp_s8", [1], 1, 0, 0, np.zeros(1, np.int32))
    with pytest.raises(KeyError, match="manifest"):
        kernel_lib.call("tabula_no_such_kernel")


@pytest.mark.host
def test_every_manifest_kernel_is_callable_by_name(kernel_lib):
    assert {k.name for k in kernels.load()} <= {n for n in kernel_lib._kernels}
    for k in kernels.load():
        assert kernel_lib.kernel(k.name).prototype == k.prototype
