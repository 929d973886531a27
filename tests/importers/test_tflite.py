"""tabula.importers.tflite: a float .tflite as an nn.Module.

Each converted operator is checked against LiteRT's own interpreter on a small model written here
(tests/fixtures/tflite_builder.py): the module's output (4-D NCHW, transposed back) equals LiteRT's float
output to float rounding.  The MLPerf Tiny files (when present) import to the hand-written ports' graphs;
what the importer refuses is one line naming the operator.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("tflite", reason="the tflite reader is missing: pip install -e '.[mlperf]' (bootstrap.sh does)")
pytest.importorskip("ai_edge_litert", reason="LiteRT (the float reference) is missing: pip install -e '.[mlperf]'")

from tabula.importers.tflite import TFLiteImportError, load_tflite  # noqa: E402
from fixtures.tflite_builder import TFLiteBuilder, run_litert  # noqa: E402


def _nchw(x):
    return x.transpose(0, 3, 1, 2) if x.ndim == 4 else x


def _nhwc(x):
    return x.transpose(0, 2, 3, 1) if x.ndim == 4 else x


def _check(tmp_path, b: TFLiteBuilder, outputs, inputs, name="m"):
    path = tmp_path / f"{name}.tflite"
    b.write(path, outputs)
    want = run_litert(path, *inputs)
    m = load_tflite(path)
    with torch.no_grad():
        got = m(*(torch.from_numpy(_nchw(x)) for x in inputs))
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = _nhwc(g.numpy())
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=2e-5 * max(1.0, float(np.abs(w).max())), rtol=0)
    return m


def _r(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def test_convolutions_same_padding_strides_and_fused_activations(tmp_path, rng):
    """CONV_2D stride 2 SAME (TFLite's extra pixel at the bottom/right: an explicit pad), dilation 2,
    DEPTHWISE_CONV_2D with multiplier 2, a grouped CONV_2D, fused RELU6 / RELU_N1_TO_1 / RELU; a fused
    TANH (which TFLite's kernels ignore) is refused."""
    b = TFLiteBuilder()
    x = b.input([1, 9, 10, 4])
    y = b.op("CONV_2D", [x, b.const(_r(rng, 6, 3, 3, 4)), b.const(_r(rng, 6))], [1, 5, 5, 6], padding="SAME",
             stride=(2, 2), activation="RELU6")
    y = b.op("DEPTHWISE_CONV_2D", [y, b.const(_r(rng, 1, 3, 3, 12)), b.const(_r(rng, 12))], [1, 5, 5, 12],
             padding="SAME", depth_multiplier=2, activation="RELU_N1_TO_1")
    y = b.op("CONV_2D", [y, b.const(_r(rng, 6, 3, 3, 6)), b.const(_r(rng, 6))], [1, 5, 5, 6], padding="SAME",
             dilation=(2, 2), activation="RELU")  # 12 input channels, weights of 6: two groups
    z = b.op("CONV_2D", [y, b.const(_r(rng, 3, 1, 1, 6)), b.const(_r(rng, 3))], [1, 5, 5, 3], padding="VALID")
    _check(tmp_path, b, [z], [_r(rng, 1, 9, 10, 4)])
    b = TFLiteBuilder()
    x = b.input([1, 4, 4, 2])
    b.write(tmp_path / "tanh.tflite", [b.op("CONV_2D", [x, b.const(_r(rng, 2, 1, 1, 2)), b.const(_r(rng, 2))],
                                            [1, 4, 4, 2], padding="VALID", activation="TANH")])
    with pytest.raises(TFLiteImportError, match=r"tanh\.tflite: op 0 \(CONV_2D\): fused activation TANH"):
        load_tflite(tmp_path / "tanh.tflite")


def test_fully_connected_flattens_in_tflite_order_and_arithmetic_broadcasts(tmp_path, rng):
    """FULLY_CONNECTED on a 4-D input flattens the NHWC elements; ADD / MUL / SUB / DIV with a per-channel
    constant broadcast on C (TFLite's last axis); a RESHAPE that changes element order."""
    b = TFLiteBuilder()
    x = b.input([1, 3, 4, 5])
    a = b.op("ADD", [x, b.const(_r(rng, 5))], [1, 3, 4, 5], activation="RELU")
    a = b.op("MUL", [a, b.const(_r(rng, 1, 1, 1, 5))], [1, 3, 4, 5])
    a = b.op("SUB", [a, x], [1, 3, 4, 5])
    a = b.op("DIV", [a, b.const(np.float32(3.0))], [1, 3, 4, 5])
    r = b.op("RESHAPE", [a, b.const(np.array([1, 12, 5], np.int32), "INT32")], [1, 12, 5], new_shape=[1, 12, 5])
    f = b.op("FULLY_CONNECTED", [a, b.const(_r(rng, 7, 60)), b.const(_r(rng, 7))], [1, 7], activation="RELU")
    _check(tmp_path, b, [f, r], [_r(rng, 1, 3, 4, 5)])


def test_pools_mean_pad_concat_transpose_slice_resize(tmp_path, rng):
    b = TFLiteBuilder()
    x = b.input([1, 8, 8, 4])
    p = b.op("AVERAGE_POOL_2D", [x], [1, 8, 8, 4], filter=(3, 3), stride=(1, 1), padding="SAME")  # excludes pads
    q = b.op("MAX_POOL_2D", [x], [1, 4, 4, 4], filter=(2, 2), stride=(2, 2), padding="VALID")
    m = b.op("MEAN", [p, b.const(np.array([1, 2], np.int32), "INT32")], [1, 1, 1, 4], keep_dims=True)
    c = b.op("CONCATENATION", [p, x], [1, 8, 8, 8], axis=3)
    d = b.op("PAD", [q, b.const(np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32), "INT32")], [1, 7, 5, 4])
    t = b.op("TRANSPOSE", [d, b.const(np.array([0, 3, 1, 2], np.int32), "INT32")], [1, 4, 7, 5])
    s = b.op("STRIDED_SLICE", [c, b.const(np.array([0, 1, 0, 2], np.int32), "INT32"),
                               b.const(np.array([1, 5, 8, 6], np.int32), "INT32"),
                               b.const(np.array([1, 1, 1, 1], np.int32), "INT32")], [1, 4, 8, 4], end_mask=4)
    u = b.op("RESIZE_NEAREST_NEIGHBOR", [q, b.const(np.array([8, 12], np.int32), "INT32")], [1, 8, 12, 4])
    _check(tmp_path, b, [m, t, s, u], [_r(rng, 1, 8, 8, 4)])


@pytest.mark.parametrize("kind", ["LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1", "LEAKY_RELU", "HARD_SWISH",
                                  "ELU", "GELU", "EXP", "SIN", "COS", "NEG", "SQUARE"])
def test_elementwise_functions(tmp_path, rng, kind):
    b = TFLiteBuilder()
    x = b.input([1, 6, 5])
    y = b.op(kind, [x], [1, 6, 5], **({"alpha": 0.1} if kind == "LEAKY_RELU" else {}))
    _check(tmp_path, b, [y], [_r(rng, 1, 6, 5, scale=2.0)], kind)


def test_softmax_on_channels_batch_matmul_and_squeeze(tmp_path, rng):
    b = TFLiteBuilder()
    x = b.input([1, 2, 3, 6])
    s = b.op("SOFTMAX", [x], [1, 2, 3, 6], beta=0.5)  # over C: dim 1 of the NCHW module
    a = b.input([1, 4, 6])
    mm = b.op("BATCH_MATMUL", [a, b.const(_r(rng, 1, 5, 6))], [1, 4, 5], adj_y=True)
    q = b.op("SQUEEZE", [mm], [4, 5], squeeze_dims=[0])
    _check(tmp_path, b, [s, q], [_r(rng, 1, 2, 3, 6), _r(rng, 1, 4, 6)])


def test_unsupported_op_quantized_model_and_bad_files_are_one_line(tmp_path):
    b = TFLiteBuilder()
    x = b.input([1, 4])
    y = b.op("ABS", [x], [1, 4])
    b.write(tmp_path / "abs.tflite", [y])
    with pytest.raises(TFLiteImportError, match=r"abs\.tflite: op 0 is ABS, which tabula's TFLite importer does not "
                                                r"convert; supported: ADD, AVERAGE_POOL_2D") as e:
        load_tflite(tmp_path / "abs.tflite")
    assert "\n" not in str(e.value)
    b = TFLiteBuilder()
    x = b.input([1, 4], dtype="INT8")
    b.write(tmp_path / "q.tflite", [b.op("RELU", [x], [1, 4])])
    with pytest.raises(TFLiteImportError, match="quantized TFLite model; tabula quantizes float models itself"):
        load_tflite(tmp_path / "q.tflite")
    (tmp_path / "junk.tflite").write_bytes(b"\0" * 64)
    with pytest.raises(ValueError, match="is not a TFLite flatbuffer"):
        load_tflite(tmp_path / "junk.tflite")


# ---- the MLPerf Tiny files: the importer gives the ports' graphs ---------------------------------------
def _mlperf():
    import sys

    from helpers import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    import mlperf_tiny

    try:
        for name in mlperf_tiny.SPECS:
            mlperf_tiny.source_files(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    return mlperf_tiny


def _graph(model, x):
    gm = torch.export.export(model, (x,)).module(check_guards=False)
    ops = [str(n.target).replace("flatten.using_ints", "reshape.default") for n in gm.graph.nodes if n.op == "call_function"]
    return ops, sorted(tuple(p.shape) for p in model.parameters())


@pytest.mark.parametrize("name", ["kws", "ic", "ad"])
def test_mlperf_files_import_to_the_ports_graphs(name):
    """The imported module runs the port's aten ops (flatten = reshape: both a RESHAPE) on the same
    weights and matches y_float as the port does; ResNet-8 quantizes to the port's integer program
    (tests/models/test_mlperf_tiny.py builds it with SCons from the file)."""
    mt = _mlperf()
    m = load_tflite(mt.source_files(name)[0])
    port = mt.load_model(name)
    d = mt.load_inputs(name)
    x = torch.from_numpy(d["x"])
    assert m.input_shapes == [(1, *x.shape[1:])]
    assert _graph(m, x[:1]) == _graph(port, x[:1])
    for a, p in zip(sorted((tuple(t.shape), t.sum().item()) for t in m.parameters()),
                    sorted((tuple(t.shape), t.sum().item()) for t in port.parameters())):
        assert a[0] == p[0] and a[1] == pytest.approx(p[1], rel=1e-6, abs=1e-6)
    with torch.no_grad():
        y = m(x).numpy()
    ref = d["y_float"]
    assert np.abs(y - ref).max() <= 1e-4 * (ref.max() - ref.min())
