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


def _one_op(op: str, ins: list[np.ndarray], attrs=None) -> Graph:
    g = Graph(inputs=[f"x{i}" for i in range(len(ins))], outputs=["y"])
    for i, a in enumerate(ins):
        g.add_tensor(Tensor(f"x{i}", a.shape, dtypes.of(a).name))
    want = specs()[op].contract([g.tensors[n].ttype for n in g.inputs], dict(attrs or {}))
    g.add_tensor(Tensor("y", want.shape, want.dtype))
    g.add_op(Op(op, list(g.inputs), ["y"], dict(attrs or {})))
    return g


def _ops25_cases(rng):
    """Issue 25's ops, one graph each, with broadcasting where the op has it: ``(graph, inputs)``."""
    def codes(shape, dt, lo=None, hi=None):
        a, b = dtypes.range_of(dt)
        return rng.integers(a if lo is None else lo, b if hi is None else hi, shape, endpoint=True).astype(dtypes.get(dt).np)

    shapes = [((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (1, 3, 1)), ((), ())]
    for op in ("GREATER", "GREATER_EQUAL", "EQUAL", "MAXIMUM", "MINIMUM"):
        for sa, sb in shapes:
            ins = [codes(sa, "int32", -3, 3), codes(sb, "int32", -3, 3)]
            yield _one_op(op, ins), ins
    for op in ("BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "LOGICAL_LEFT_SHIFT"):
        for dt in ("int8", "int16", "int32"):
            for sa, sb in shapes:
                b = codes(sb, dt, 0, dtypes.get(dt).bits - 1) if op == "LOGICAL_LEFT_SHIFT" else codes(sb, dt)
                ins = [codes(sa, dt), b]
                yield _one_op(op, ins), ins
    for dt in ("int8", "int16", "int32"):
        for sc, sa, sb in (((2, 1, 4), (2, 3, 4), (1, 3, 1)), ((3,), (3,), (3,)), ((1,), (1,), (1,))):
            ins = [codes(sc, "int8", -1, 1), codes(sa, dt), codes(sb, dt)]
            yield _one_op("SELECT", ins), ins
        x = codes((2, 3, 5), dt)
        for axis in range(3):
            yield _one_op("REVERSE", [x], {"axis": axis}), [x]
            yield _one_op("REDUCE_MIN", [x], {"axis": axis}), [x]
            if dt != "int32":
                ties = codes((2, 3, 5), dt, -1, 1)
                yield _one_op("ARGMAX", [ties], {"axis": axis}), [ties]
        if dt != "int32":
            v = codes((7,), dt)
            yield _one_op("ARGMAX", [v], {"axis": 0}), [v]


@pytest.mark.host
def test_issue_25s_ops_through_their_kernel_calls_equal_the_reference(kernel_lib, rng):
    """Each of issue 25's IR ops (comparisons, MAXIMUM / MINIMUM, the bitwise ops, LOGICAL_LEFT_SHIFT, SELECT,
    REVERSE, REDUCE_MIN, ARGMAX) is one kernel call equal to its Python reference, with broadcasting (rank 0 for the
    broadcasting binary ops; SELECT's contract takes ranks 1 to 6)."""
    from tabula.reference.interpreter import run_graph as run_reference

    seen = set()
    for g, ins in _ops25_cases(rng):
        assert kernel_calls.unsupported(g, set(kernels.names())) is None
        (got,), (want,) = kernel_calls.run_graph(kernel_lib, g, ins), run_reference(g, ins)
        assert got.dtype == want.dtype and got.shape == want.shape, g.ops[0]
        np.testing.assert_array_equal(got, want, err_msg=str(g.ops[0]))
        seen.add(g.ops[0].op)
    assert len(seen) == 13
