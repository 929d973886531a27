"""Issue 21's ops on the official TOSA reference model: TRANSPOSE_CONV2D and RESIZE BILINEAR (new TOSA
mappings) op by op, int8 and int16, equal the reference interpreter bit for bit; and whole models --
nn.TransformerEncoderLayer (the integer LayerNorm, heads, softmax), a
causal attention (the masked softmax), the tiny U-Net (transposed conv, bilinear upsampling), the temporal
conv net -- exported as one TOSA 1.0 flatbuffer each, equal ``program.run_int`` on real and random inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import load_example
from tabula import dtypes
from tabula import tosa as T
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import run_graph

pytestmark = pytest.mark.tosa


def _codes(rng, shape, dt):
    lo, hi = dtypes.range_of(dt)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtypes.get(dt).np)


def _graph(x, dt, op: Op, acc_shape, consts=None) -> Graph:
    """``x -> op -> acc -> RESCALE x 2^-k -> y``: the accumulator stays inside (the reference model has no
    int48 graph output)."""
    acc = dtypes.ACC_DTYPE[dt]
    g = Graph(inputs=["x"], outputs=["y"])
    g.add_tensor(Tensor("x", x.shape, dt))
    for n, v in (consts or {}).items():
        g.add_tensor(Tensor(n, v.shape, dtypes.of(v).name), v)
    g.add_tensor(Tensor("acc", acc_shape, acc))
    g.add_tensor(Tensor("y", acc_shape, dt))
    g.add_op(op)
    g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": 0, "multiplier": [1 << 14 if acc == "int48" else 1 << 30],
                                            "shift": [24 if acc == "int48" else 40], "scale32": acc == "int32"}))
    return g


@pytest.mark.parametrize("dt", ["int8", "int16"])
@pytest.mark.parametrize("stride,out_pad,k", [([2, 2], [0, 0, 0, 0], 2), ([2, 2], [-1, 0, -1, 0], 3), ([1, 3], [0, 1, -2, 2], 3)])
def test_transpose_conv2d_matches_the_reference(rng, dt, stride, out_pad, k):
    x = _codes(rng, (1, 3, 4, 5), dt)
    w = rng.integers(-127, 127, (6, k, k, 5), endpoint=True).astype(np.int8)
    b = rng.integers(-9000, 9000, 6).astype(dtypes.get(dtypes.ACC_DTYPE[dt]).np)
    oh, ow = (3 - 1) * stride[0] + out_pad[0] + out_pad[1] + k, (4 - 1) * stride[1] + out_pad[2] + out_pad[3] + k
    op = Op("TRANSPOSE_CONV2D", ["x", "w", "b"], ["acc"], {"out_pad": out_pad, "stride": stride,
                                                             "input_zp": -3 if dt == "int8" else 0, "weight_zp": 0})
    g = _graph(x, dt, op, (1, oh, ow, 6), {"w": w, "b": b})
    (want,) = run_graph(g, [x])
    assert len(np.unique(want)) > 10
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], want)


@pytest.mark.parametrize("dt", ["int8", "int16"])
@pytest.mark.parametrize("h,w,oh,ow,align", [(4, 5, 8, 10, False), (3, 5, 7, 13, True), (6, 4, 3, 4, False), (5, 7, 9, 12, False)])
def test_resize_bilinear_matches_the_reference(rng, dt, h, w, oh, ow, align):
    from tabula.lowering.ops.upsample import _bilinear_axis

    (ny, dy, oy, by), (nx, dx, ox, bx) = _bilinear_axis(h, oh, align, None), _bilinear_axis(w, ow, align, None)
    x = _codes(rng, (2, h, w, 3), dt)
    op = Op("RESIZE", ["x"], ["acc"], {"mode": "BILINEAR", "scale": [ny, dy, nx, dx], "offset": [oy, ox], "border": [by, bx]})
    g = _graph(x, dt, op, (2, oh, ow, 3))
    (want,) = run_graph(g, [x])
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], want)


_PROGRAMS: dict = {}


def _program(name: str, scheme: str):
    import tabula

    # by file: benchmarks/ on sys.path would shadow examples/mlperf_tiny with benchmarks/mlperf_tiny.py
    coverage_models = load_example("benchmarks/coverage_models.py", "coverage_models")

    if (name, scheme) not in _PROGRAMS:
        if name == "causal":
            from models.test_transformer_ops import Attention

            torch.manual_seed(0)
            model, x = Attention("causal").eval(), torch.randn(20, 6, 8)
            calib, test = x[:16], x[16:]
        else:
            model, calib, test = coverage_models.make(name)
        gm = tabula.quantize(model, (calib[:1],), calib[:16], scheme=scheme)
        _PROGRAMS[name, scheme] = tabula.lower(gm), test[:2].numpy()
    return _PROGRAMS[name, scheme]


CASES = [("encoder", "int8"), ("encoder", "a16w8"), ("causal", "int8"), ("unet", "a16w8"), ("tcn", "int8")]


@pytest.mark.parametrize("name,scheme", CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_whole_model_on_the_tosa_reference_model(rng, name, scheme):
    program, samples = _program(name, scheme)
    g = program.graph
    flatbuffer = T.serialize(g)
    inputs = [program.quantize_inputs(s[None]) for s in samples]
    lo, hi = dtypes.range_of(g.tensors[g.inputs[0]].dtype)
    inputs.append([rng.integers(lo, hi, g.tensors[g.inputs[0]].shape, endpoint=True).astype(g.tensors[g.inputs[0]].np_dtype)])
    for ins in inputs:
        want = program.run_int(*ins)
        got = T.run(flatbuffer, ins)
        for n, a, b in zip(g.outputs, got, want):
            np.testing.assert_array_equal(a.reshape(b.shape), b, err_msg=f"{name}-{scheme} output {n}")
