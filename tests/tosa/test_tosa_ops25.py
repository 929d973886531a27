"""Issue 25's IR ops on the official TOSA reference model, op by op: the comparisons (GREATER,
GREATER_EQUAL, EQUAL: TOSA's bool, CAST to the IR's int8 mask), MAXIMUM / MINIMUM, BITWISE_AND / OR / XOR,
LOGICAL_LEFT_SHIFT, SELECT (the mask CAST to bool), REVERSE, REDUCE_MIN and ARGMAX, each with broadcasting
where TOSA has it, equal the reference interpreter bit for bit on random codes and ties; and each graph's
export read back (tabula.tosa.read: the comparisons' BOOL and SELECT's condition as the IR's mask, the CASTs
the export writes read as aliases) is the same ops with the same attributes, computing the same codes."""
from __future__ import annotations

import numpy as np
import pytest

from tabula import dtypes
from tabula import tosa as T
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import run_graph
from tabula.reference.ops import specs

pytestmark = pytest.mark.tosa


def _graph(op: str, ins: list[np.ndarray], attrs=None) -> Graph:
    g = Graph(inputs=[f"x{i}" for i in range(len(ins))], outputs=["y"])
    for i, a in enumerate(ins):
        g.add_tensor(Tensor(f"x{i}", a.shape, dtypes.of(a).name))
    want = specs()[op].contract([g.tensors[n].ttype for n in g.inputs], dict(attrs or {}))
    g.add_tensor(Tensor("y", want.shape, want.dtype))
    g.add_op(Op(op, list(g.inputs), ["y"], dict(attrs or {})))
    return g


def _same(g: Graph, ins) -> np.ndarray:
    (want,) = run_graph(g, ins)
    (got,) = T.run_graph(g, ins)
    np.testing.assert_array_equal(got, want)
    back = T.read(T.serialize(g))
    ops = [(o.op, o.attrs) for o in back.ops if o.op != "RESHAPE"]  # a 1-D ARGMAX's rank-0 result: RESHAPEs
    assert ops == [(o.op, o.attrs) for o in g.ops]
    (again,) = run_graph(back, ins)
    np.testing.assert_array_equal(again.reshape(want.shape), want)
    return want


def _codes(rng, shape, dt, lo=None, hi=None):
    a, b = dtypes.range_of(dt)
    return rng.integers(a if lo is None else lo, b if hi is None else hi, shape, endpoint=True).astype(dtypes.get(dt).np)


@pytest.mark.parametrize("op", ["GREATER", "GREATER_EQUAL", "EQUAL", "MAXIMUM", "MINIMUM"])
def test_int32_binary_ops(rng, op):
    for sa, sb in (((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (1, 3, 1))):
        a, b = _codes(rng, sa, "int32", -3, 3), _codes(rng, sb, "int32", -3, 3)
        want = _same(_graph(op, [a, b]), [a, b])
        assert want.dtype == (np.int8 if op in ("GREATER", "GREATER_EQUAL", "EQUAL") else np.int32)


@pytest.mark.parametrize("op", ["BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "LOGICAL_LEFT_SHIFT"])
@pytest.mark.parametrize("dt", ["int8", "int16", "int32"])
def test_bitwise_ops(rng, op, dt):
    a = _codes(rng, (3, 1, 5), dt)
    b = _codes(rng, (1, 4, 5), dt, 0, dtypes.get(dt).bits - 1) if op == "LOGICAL_LEFT_SHIFT" else _codes(rng, (1, 4, 5), dt)
    _same(_graph(op, [a, b]), [a, b])


@pytest.mark.parametrize("dt", ["int8", "int16", "int32"])
def test_select(rng, dt):
    c = rng.integers(0, 2, (2, 1, 4)).astype(np.int8)
    a, b = _codes(rng, (2, 3, 4), dt), _codes(rng, (1, 3, 1), dt)
    _same(_graph("SELECT", [c, a, b]), [c, a, b])


@pytest.mark.parametrize("dt", ["int8", "int16", "int32"])
def test_reverse_reduce_min_and_argmax(rng, dt):
    x = _codes(rng, (2, 3, 5), dt)
    for axis in range(3):
        _same(_graph("REVERSE", [x], {"axis": axis}), [x])
        _same(_graph("REDUCE_MIN", [x], {"axis": axis}), [x])
        if dt != "int32":
            ties = _codes(rng, (2, 3, 5), dt, -1, 1)
            _same(_graph("ARGMAX", [ties], {"axis": axis}), [ties])
    if dt != "int32":
        v = _codes(rng, (7,), dt)
        _same(_graph("ARGMAX", [v], {"axis": 0}), [v])
