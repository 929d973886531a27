"""The reference interpreter: op discovery by folder, a whole small graph (checked against the
op functions chained by hand and against the C kernels), and its error messages."""
from __future__ import annotations

import numpy as np
import pytest

from tabula.ir import OPS, Graph, Op, Tensor, verify
from tabula.qmath import build_table_int8, quantize_multiplier
from tabula.reference.interpreter import InterpreterError, op_functions, run_graph
from tabula.reference.ops import conv2d, fully_connected, max_pool2d, rescale, table, transpose


def test_every_ir_op_has_a_reference():
    assert set(op_functions()) == set(OPS)


def _graph(rng) -> Graph:
    g = Graph(inputs=["x"], outputs=["y"])
    T = lambda *a, **k: g.add_tensor(Tensor(*a, **k))  # noqa: E731
    T("x", (1, 8, 8, 3), "int8")
    g.add_tensor(Tensor("w", (4, 3, 3, 3), "int8"), rng.integers(-127, 127, (4, 3, 3, 3), endpoint=True))
    g.add_tensor(Tensor("b", (4,), "int32"), rng.integers(-5000, 5000, 4))
    T("acc", (1, 8, 8, 4), "int32")
    T("q", (1, 8, 8, 4), "int8")
    g.add_tensor(Tensor("lut", (256,), "int8"), build_table_int8(np.tanh, 0.05, 3, 1 / 128, 0))
    T("t", (1, 8, 8, 4), "int8")
    T("p", (1, 4, 4, 4), "int8")
    T("nchw", (1, 4, 4, 4), "int8")
    T("flat", (1, 64), "int8")
    g.add_tensor(Tensor("fw", (10, 64), "int8"), rng.integers(-127, 127, (10, 64), endpoint=True))
    g.add_tensor(Tensor("fb", (10,), "int32"), rng.integers(-5000, 5000, 10))
    T("facc", (1, 10), "int32")
    T("y", (1, 10), "int8")
    ms, ss = zip(*(quantize_multiplier(s) for s in (0.003, 0.004, 0.0021, 0.005)))
    m2, s2 = quantize_multiplier(0.0007)
    g.add_op(Op("CONV2D", ["x", "w", "b"], ["acc"], {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1],
                                                      "input_zp": -5, "weight_zp": 0}, "conv1"))
    g.add_op(Op("RESCALE", ["acc"], ["q"], {"input_zp": 0, "output_zp": 3, "multiplier": list(ms), "shift": list(ss)}, "rq1"))
    g.add_op(Op("TABLE", ["q", "lut"], ["t"], {}, "tanh"))
    g.add_op(Op("MAX_POOL2D", ["t"], ["p"], {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0]}, "pool"))
    g.add_op(Op("TRANSPOSE", ["p"], ["nchw"], {"perms": [0, 3, 1, 2]}, "to_nchw"))
    g.add_op(Op("RESHAPE", ["nchw"], ["flat"], {"shape": [1, 64]}, "flatten"))
    g.add_op(Op("FULLY_CONNECTED", ["flat", "fw", "fb"], ["facc"], {"input_zp": 0, "weight_zp": 0}, "fc"))
    g.add_op(Op("RESCALE", ["facc"], ["y"], {"input_zp": 0, "output_zp": -7, "multiplier": [m2], "shift": [s2]}, "rq2"))
    verify(g)
    return g


def test_graph_equals_ops_chained_by_hand(rng):
    g = _graph(rng)
    c = g.constants
    x = rng.integers(-128, 127, (1, 8, 8, 3), endpoint=True, dtype=np.int8)
    (y,) = run_graph(g, [x])
    a = {o.source: {**o.attrs, "output_dtype": g.tensors[o.outputs[0]].dtype} for o in g.ops}
    h = conv2d.run([x, c["w"], c["b"]], a["conv1"])
    h = rescale.run([h], a["rq1"])
    h = table.run([h, c["lut"]], {})
    h = max_pool2d.run([h], a["pool"])
    h = transpose.run([h], a["to_nchw"]).reshape(1, 64)
    h = fully_connected.run([h, c["fw"], c["fb"]], a["fc"])
    want = rescale.run([h], a["rq2"])
    assert y.dtype == np.int8 and y.shape == (1, 10)
    np.testing.assert_array_equal(y, want)
    assert len(np.unique(y)) > 3  # not saturated to a constant


@pytest.mark.host
def test_graph_equals_c_kernels(kernel_lib, rng):
    g = _graph(rng)
    c = g.constants
    a = {o.source: o.attrs for o in g.ops}
    x = rng.integers(-128, 127, (1, 8, 8, 3), endpoint=True, dtype=np.int8)
    h = kernel_lib.conv2d(x, c["w"], c["b"], pad=[1, 1, 1, 1], stride=[1, 1], dilation=[1, 1], input_zp=-5, weight_zp=0)
    h = kernel_lib.rescale(h, input_zp=0, output_zp=3, multiplier=a["rq1"]["multiplier"], shift=a["rq1"]["shift"])
    h = kernel_lib.table(h, c["lut"])
    h = kernel_lib.max_pool2d(h, kernel=(2, 2), stride=(2, 2), pad=(0, 0, 0, 0))
    h = kernel_lib.transpose(h, [0, 3, 1, 2]).reshape(1, 64)
    h = kernel_lib.fully_connected(h, c["fw"], c["fb"], input_zp=0, weight_zp=0)
    h = kernel_lib.rescale(h, input_zp=0, output_zp=-7, multiplier=a["rq2"]["multiplier"], shift=a["rq2"]["shift"])
    np.testing.assert_array_equal(run_graph(g, [x])[0], h)


def test_wrong_inputs_are_named(rng):
    g = _graph(rng)
    with pytest.raises(InterpreterError, match=r"graph input 'x'.*int8 \(1, 8, 8, 3\).*int16"):
        run_graph(g, [np.zeros((1, 8, 8, 3), np.int16)])
    with pytest.raises(InterpreterError, match=r"graph input 'x'.*\(1, 3, 8, 8\)"):
        run_graph(g, [np.zeros((1, 3, 8, 8), np.int8)])
    with pytest.raises(InterpreterError, match="1 inputs"):
        run_graph(g, [])


def test_result_mismatch_names_op_and_source(rng):
    g = _graph(rng)
    g.tensors["p"].shape = (1, 3, 3, 4)  # break the IR behind verify's back
    with pytest.raises(InterpreterError, match=r"MAX_POOL2D \(pool\).*\(1, 4, 4, 4\).*'p'"):
        run_graph(g, [np.zeros((1, 8, 8, 3), np.int8)])


def test_op_failure_and_unknown_op_name_the_source(rng):
    g = _graph(rng)
    g.ops[1].attrs["shift"] = [1] * 4
    with pytest.raises(InterpreterError, match=r"RESCALE \(rq1\).*shift") as e:
        run_graph(g, [np.zeros((1, 8, 8, 3), np.int8)])
    assert isinstance(e.value.__cause__, ValueError)
    g = _graph(rng)
    g.ops[2].op = "SIGMOID"
    with pytest.raises(InterpreterError, match=r"SIGMOID \(tanh\): no reference op"):
        run_graph(g, [np.zeros((1, 8, 8, 3), np.int8)])


def _graph_a16w8(rng) -> Graph:
    """An int16 graph over the a16w8 ops: CONV2D -> RESCALE (int48, scale32=false) -> AVG/MAX_POOL2D
    -> CLAMP -> CONCAT (3 inputs) -> RESCALE to int32 -> MUL / ADD / SUB -> RESCALE to int16."""
    from tabula.qmath import quantize_multiplier_16

    g = Graph(inputs=["x"], outputs=["y"])
    T = lambda *a, **k: g.add_tensor(Tensor(*a, **k))  # noqa: E731
    T("x", (1, 6, 6, 2), "int16")
    g.add_tensor(Tensor("w", (3, 3, 3, 2), "int8"), rng.integers(-127, 127, (3, 3, 3, 2), endpoint=True))
    g.add_tensor(Tensor("b", (3,), "int64"), rng.integers(-(2**30), 2**30, 3))
    for name, shape, dtype in [("acc", (1, 6, 6, 3), "int64"), ("h", (1, 6, 6, 3), "int16"), ("ap", (1, 3, 3, 3), "int16"),
                               ("mp", (1, 3, 3, 3), "int16"), ("cl", (1, 3, 3, 3), "int16"), ("cat", (1, 3, 3, 9), "int16"),
                               ("a32", (1, 3, 3, 9), "int32"), ("sq", (1, 3, 3, 9), "int32"), ("s", (1, 3, 3, 9), "int32"),
                               ("d", (1, 3, 3, 9), "int32"), ("y", (1, 3, 3, 9), "int16")]:
        T(name, shape, dtype)
    ms, ss = zip(*(quantize_multiplier_16(v) for v in (2e-4, 3e-4, 1.5e-4)))
    pool = {"kernel": [3, 3], "stride": [2, 2], "pad": [1, 1, 1, 1]}
    g.add_op(Op("CONV2D", ["x", "w", "b"], ["acc"], {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1],
                                                      "input_zp": 0, "weight_zp": 0}, "conv"))
    g.add_op(Op("RESCALE", ["acc"], ["h"], {"input_zp": 0, "output_zp": 0, "multiplier": list(ms), "shift": list(ss),
                                            "scale32": False}, "rq48"))
    g.add_op(Op("AVG_POOL2D", ["h"], ["ap"], {**pool, "input_zp": 0, "output_zp": 0}, "avg"))
    g.add_op(Op("MAX_POOL2D", ["h"], ["mp"], pool, "max"))
    g.add_op(Op("CLAMP", ["mp"], ["cl"], {"min": -1000, "max": 20000}, "clamp"))
    g.add_op(Op("CONCAT", ["ap", "mp", "cl"], ["cat"], {"axis": 3}, "cat"))
    g.add_op(Op("RESCALE", ["cat"], ["a32"], {"input_zp": 0, "output_zp": 0, "multiplier": [2**30], "shift": [30]}, "to32"))
    g.add_op(Op("MUL", ["a32", "a32"], ["sq"], {"shift": 15}, "sq"))
    g.add_op(Op("ADD", ["sq", "a32"], ["s"], {}, "add"))
    g.add_op(Op("SUB", ["s", "a32"], ["d"], {}, "sub"))
    g.add_op(Op("RESCALE", ["d"], ["y"], {"input_zp": 0, "output_zp": 0, "multiplier": [2**30], "shift": [31]}, "out"))
    verify(g)
    return g


@pytest.mark.host
def test_a16w8_graph_equals_c_kernels(kernel_lib, rng):
    g = _graph_a16w8(rng)
    c = g.constants
    a = {o.source: o.attrs for o in g.ops}
    x = rng.integers(-32768, 32767, (1, 6, 6, 2), endpoint=True, dtype=np.int16)
    (y,) = run_graph(g, [x])
    assert y.dtype == np.int16 and len(np.unique(y)) > 3
    h = kernel_lib.conv2d(x, c["w"], c["b"], pad=[1, 1, 1, 1], stride=[1, 1], dilation=[1, 1], input_zp=0, weight_zp=0)
    h = kernel_lib.rescale(h, input_zp=0, output_zp=0, multiplier=a["rq48"]["multiplier"], shift=a["rq48"]["shift"],
                           output_dtype="int16")
    pool = {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1, 1, 1)}
    ap, mp = kernel_lib.avg_pool2d(h, **pool), kernel_lib.max_pool2d(h, **pool)
    cat = kernel_lib.concat([ap, mp, kernel_lib.clamp(mp, -1000, 20000)], 3)
    a32 = kernel_lib.rescale(cat, input_zp=0, output_zp=0, multiplier=[2**30], shift=[30], output_dtype="int32")
    d = kernel_lib.sub(kernel_lib.add(kernel_lib.mul(a32, a32, 15), a32), a32)
    want = kernel_lib.rescale(d, input_zp=0, output_zp=0, multiplier=[2**30], shift=[31], output_dtype="int16")
    np.testing.assert_array_equal(y, want)


def test_int48_overflow_is_named(rng):
    g = _graph_a16w8(rng)
    g.constants["b"] = np.full(3, 2**47 - 1, np.int64)
    g.constants["w"] = np.ones((3, 3, 3, 2), np.int8)  # every tap adds 32767: past 2^47 - 1
    with pytest.raises(InterpreterError, match=r"CONV2D \(conv\).*int48 accumulator overflow"):
        run_graph(g, [np.full((1, 6, 6, 2), 32767, np.int16)])
