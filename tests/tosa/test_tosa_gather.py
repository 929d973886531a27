"""GATHER on the official TOSA reference model: values [N, K, C] int8 / int16 / int32 and int32 indices [N, W]
(first and last rows, repeats, W = 1) equal the reference interpreter bit for bit, and the export read back
(tabula.tosa.read) is the same op computing the same codes; a constant index tensor (as the lowering writes
it) is exported as a CONST.  The kernel call of the TOSA system under test equals the reference too."""
from __future__ import annotations

import numpy as np
import pytest

from tabula import dtypes, kernels
from tabula import tosa as T
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import run_graph
from tabula.tosa import kernel_calls


def _graph(values: np.ndarray, indices: np.ndarray, constant_indices: bool) -> Graph:
    g = Graph(inputs=["v"] + ([] if constant_indices else ["i"]), outputs=["y"])
    g.add_tensor(Tensor("v", values.shape, dtypes.of(values).name))
    g.add_tensor(Tensor("i", indices.shape, "int32"), indices if constant_indices else None)
    g.add_tensor(Tensor("y", (values.shape[0], indices.shape[1], values.shape[2]), dtypes.of(values).name))
    g.add_op(Op("GATHER", ["v", "i"], ["y"], {}))
    return g


def _cases(rng):
    for dt in ("int8", "int16", "int32"):
        lo, hi = dtypes.range_of(dt)
        for (n, k, c), idx in (((1, 5, 3), [[0, 4, 4, 0, 2]]), ((2, 4, 17), [[3], [0]]), ((2, 3, 1), [[2, 2, 1, 0], [0, 0, 0, 0]])):
            v = rng.integers(lo, hi, (n, k, c), endpoint=True, dtype=np.int64).astype(dtypes.get(dt).np)
            yield v, np.array(idx, np.int32)


@pytest.mark.tosa
@pytest.mark.parametrize("constant_indices", [False, True])
def test_gather_on_the_tosa_reference_model(rng, constant_indices):
    for v, i in _cases(rng):
        g = _graph(v, i, constant_indices)
        ins = [v] if constant_indices else [v, i]
        (want,) = run_graph(g, ins)
        np.testing.assert_array_equal(want, np.take_along_axis(v, i[:, :, None].astype(np.int64), axis=1))
        (got,) = T.run_graph(g, ins)
        np.testing.assert_array_equal(got, want)
        back = T.read(T.serialize(g))
        assert [(o.op, o.attrs) for o in back.ops] == [("GATHER", {})]
        (again,) = run_graph(back, ins)
        np.testing.assert_array_equal(again, want)


@pytest.mark.host
def test_gather_kernel_call_equals_the_reference(kernel_lib, rng):
    for v, i in _cases(rng):
        g = _graph(v, i, False)
        assert kernel_calls.unsupported(g, set(kernels.names())) is None
        (got,), (want,) = kernel_calls.run_graph(kernel_lib, g, [v, i]), run_graph(g, [v, i])
        np.testing.assert_array_equal(got, want)
