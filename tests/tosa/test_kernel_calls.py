"""tabula.tosa.kernel_calls, the system under test's engine: every IR op is one call of our C kernels, and a
whole model graph run that way equals the Python reference bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from tabula import dtypes, kernels
from tabula.ir import Graph, Op, Tensor
from tabula.reference.ops import specs
from tabula.tosa import kernel_calls


def test_every_ir_op_has_a_kernel_call():
    assert set(kernel_calls.CALLS) == set(specs())


@pytest.mark.host
def test_the_digits_graph_through_the_kernels_equals_the_reference(digits_program, kernel_lib, rng):
    g = digits_program.graph
    assert kernel_calls.unsupported(g, set(kernels.names())) is None
    outs = set()
    for _ in range(3):
        ins = []
        for n in g.inputs:
            lo, hi = dtypes.range_of(g.tensors[n].dtype)
            ins.append(rng.integers(lo, hi, g.tensors[n].shape, endpoint=True).astype(g.tensors[n].np_dtype))
        got = kernel_calls.run_graph(kernel_lib, g, ins)
        want = digits_program.run_int(*ins)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
        outs.add(got[0].tobytes())
    assert len(outs) == 3


def test_what_the_kernels_do_not_take_is_named():
    g = Graph(inputs=["x"], outputs=["y"])
    g.add_tensor(Tensor("x", (2, 3), "int48"))
    g.add_tensor(Tensor("y", (3, 2), "int48"))
    g.add_op(Op("TRANSPOSE", ["x"], ["y"], {"perms": [1, 0]}))
    assert kernel_calls.unsupported(g, set(kernels.names())) == \
        "TRANSPOSE: int48 elements of 8 bytes (tabula_transpose moves 1, 2 or 4)"
    g.ops[0] = Op("RESCALE", ["x"], ["y"], {"multiplier": [1 << 14], "shift": [20], "scale32": False})
    g.tensors["y"] = Tensor("y", (2, 3), "int32")
    why = kernel_calls.unsupported(g, set(kernels.names()) - {"tabula_rescale_s64_s32"})
    assert why == "RESCALE: int48 -> int32 has no C kernel (tabula_rescale_s64_s32 is not in the manifest)"
    with pytest.raises(ValueError, match=r"graph input x: expected int48 \(2, 3\), got int32 \(2, 3\)"):
        kernel_calls.run_graph(None, g, [np.zeros((2, 3), np.int32)])
