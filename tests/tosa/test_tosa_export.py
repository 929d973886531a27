"""The whole IR as one TOSA 1.0 flatbuffer (tabula.tosa.serialize; each op's mapping in its spec):
digits, the MLPerf Tiny models (kws, ic, ad) and the fixture models, int8 and a16w8, run on the official
TOSA reference model equal tabula's reference interpreter bit for bit on real inputs and on random codes.
Then the mappings that are not one-to-one, op by op: the 1.0.0 header, RESIZE's floor, PAD's interleaved
padding, FULLY_CONNECTED as CONV2D (and its int16 RESCALE before the RESHAPE), windows whose last rows no
window reads, a graph input returned as an output; and ``tabula tosa``.

Each model is quantized once per scheme (module cache); the MLPerf Tiny models skip, saying why, when
their data (``../shared/mlperf_tiny``) or the ``tflite`` reader is absent."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from helpers import ROOT
from tabula import dtypes
from tabula import tosa as T
from tabula.errors import IRError
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import run_graph

pytestmark = pytest.mark.tosa

sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

MLPERF = ["kws", "ic", "ad"]
FIXTURES = ["zoo", "conv_family", "attention", "softmax_classifier", "mve_shapes", "elementwise", "activations"]
#: activations' int16 form is 228 ops of tiled tables that take ~10 s to plan; its ops are checked one
#: by one against TOSA in test_tosa_conformance.py (every table op, int16), so the model runs int8 only.
CASES = [(m, s) for m in ["digits", *MLPERF, *FIXTURES] for s in ("int8", "a16w8") if (m, s) != ("activations", "a16w8")]
#: real test samples per model (plus one input of random codes over the whole range)
N_REAL = 3


def _fixture_model(name: str):
    """(model, calibration [n, ...] float32, test samples [k, ...]) of a tests/fixtures model."""
    from activations_model import Activations
    from attention_model import TinyAttention
    from conv_family_model import conv_family
    from elementwise_model import ElementwiseZoo
    from mve_shapes_model import MveShapes
    from softmax_classifier import SoftmaxClassifier
    from zoo_model import Zoo

    torch.manual_seed(0)
    model, shape, gain = {"zoo": (Zoo, (3, 8, 8), 1.0), "conv_family": (conv_family, (4, 10, 12), 1.0),
                          "attention": (TinyAttention, (6, 8), 1.0), "softmax_classifier": (SoftmaxClassifier, (16,), 1.0),
                          "mve_shapes": (MveShapes, (5, 11, 9), 1.0), "elementwise": (ElementwiseZoo, (3, 6, 6), 1.0),
                          "activations": (Activations, (64,), 2.0)}[name]
    x = gain * torch.randn(32 + N_REAL, *shape)
    return model().eval(), x[:32].numpy(), x[32:].numpy()


def _mlperf_model(name: str):
    pytest.importorskip("tflite", reason="the tflite reader is missing: pip install -e '.[mlperf]' (bootstrap.sh does)")
    import mlperf_tiny

    try:
        model = mlperf_tiny.load_model(name)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    x = mlperf_tiny.load_inputs(name)["x"]
    calib, test = mlperf_tiny.split(len(x))
    return model, x[calib], x[test[:N_REAL]]


_CACHE: dict = {}


@pytest.fixture(scope="module")
def program_of(digits_dir, digits_program):
    """``program_of(model, scheme)`` -> (tabula.Program, float test samples), quantized once."""
    import tabula

    def get(name: str, scheme: str):
        if (name, scheme) not in _CACHE:
            if name == "digits":
                from digits_fixture import load_digits_artifacts

                ep, calib, x, _ = load_digits_artifacts(digits_dir)
                program = digits_program if scheme == "int8" else tabula.lower(tabula.quantize(ep, (calib[:1],), calib[:400],
                                                                                               scheme=scheme))
                _CACHE[name, scheme] = program, np.asarray(x[:N_REAL], np.float32)
            else:
                model, calib, test = (_mlperf_model if name in MLPERF else _fixture_model)(name)
                example = (torch.from_numpy(calib[:1]),)
                gm = tabula.quantize(model, example, [(torch.from_numpy(c[None]),) for c in calib], scheme=scheme)
                _CACHE[name, scheme] = tabula.lower(gm, example), test
        return _CACHE[name, scheme]

    return get


_FLATBUFFERS: dict = {}


def _flatbuffer(name: str, scheme: str, g: Graph) -> bytes:
    """``T.serialize(g)`` of a model case, once per case (tosa-tools' serializer writes constants byte by
    byte: the MLPerf models take seconds each), shared by the export and the read-back tests."""
    if (name, scheme) not in _FLATBUFFERS:
        _FLATBUFFERS[name, scheme] = T.serialize(g)
    return _FLATBUFFERS[name, scheme]


def _random_codes(g: Graph, rng) -> list[np.ndarray]:
    out = []
    for n in g.inputs:
        t = g.tensors[n]
        lo, hi = dtypes.range_of(t.dtype)
        out.append(rng.integers(lo, hi, t.shape, endpoint=True).astype(t.np_dtype))
    return out


@pytest.mark.parametrize("name,scheme", CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_whole_graph_on_the_tosa_reference_model_equals_the_reference(program_of, name, scheme, rng):
    """One flatbuffer per model, run on N_REAL real samples and one input of random codes: every output
    equal to ``program.run_int``; the real outputs are not all alike (the comparison sees real values)."""
    program, samples = program_of(name, scheme)
    g = program.graph
    flatbuffer = _flatbuffer(name, scheme, g)
    info = T.describe(flatbuffer)
    assert info["version"] == (1, 0, 0, False)
    assert {o.op for o in g.ops} <= set(T.supported_ops()) and len(info["ops"]) > len(g.ops) / 2
    inputs = [program.quantize_inputs(x[None]) for x in samples] + [_random_codes(g, rng)]
    real = []
    for ins in inputs:
        want = program.run_int(*ins)
        got = T.run(flatbuffer, ins)
        assert len(got) == len(want) == len(g.outputs)
        for n, a, b in zip(g.outputs, got, want):
            assert a.dtype == b.dtype, n
            np.testing.assert_array_equal(a.reshape(b.shape), b, err_msg=f"{name}-{scheme} output {n}")
        real.append(want)
    k = 0 if name != "elementwise" else 1  # elementwise's output 0 is its input itself
    assert len({r[k].tobytes() for r in real[:-1]}) > 1 or real[0][k].max() > real[0][k].min()


WINDOWS = ("CONV2D", "DEPTHWISE_CONV2D", "AVG_POOL2D", "MAX_POOL2D")


def _without_window_slices(g: Graph, read: Graph) -> tuple[list[Op], int]:
    """The ops of ``read`` without the SLICEs the export put before a window op (where no window reads the
    last rows or columns), aligned with ``g``'s ops; and how many there were."""
    ops, extra = [], 0
    for k, o in enumerate(read.ops):
        nxt = read.ops[k + 1] if k + 1 < len(read.ops) else None
        if (o.op == "SLICE" and nxt is not None and nxt.op in WINDOWS and nxt.inputs[0] == o.outputs[0]
                and len(ops) < len(g.ops) and g.ops[len(ops)].op != "SLICE"):
            extra += 1
            continue
        ops.append(o)
    return ops, extra


@pytest.mark.parametrize("name,scheme", CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_reading_the_export_back_gives_an_equivalent_graph(program_of, name, scheme, rng):
    """export -> read (tabula.tosa.read) gives back the IR: the same inputs and outputs (order, shapes, dtypes),
    the same ops in the same order (FULLY_CONNECTED folded back from its RESHAPE, CONV2D, RESHAPE), except a
    SLICE before each window op the export trimmed; each attribute TOSA carries equal (but a window's ``pad``,
    trimmed; the IR's other attributes say where an op came from, e.g. a TABLE's function);
    the same constants; and the same outputs on the reference interpreter for real samples and random codes.
    Exporting the read graph gives the same TOSA operators again."""
    program, samples = program_of(name, scheme)
    g = program.graph
    flatbuffer = _flatbuffer(name, scheme, g)
    g2 = T.read(flatbuffer)
    assert [(g2.tensors[n].shape, g2.tensors[n].dtype) for n in g2.inputs] == [(g.tensors[n].shape, g.tensors[n].dtype) for n in g.inputs]
    assert [(g2.tensors[n].shape, g2.tensors[n].dtype) for n in g2.outputs] == [(g.tensors[n].shape, g.tensors[n].dtype) for n in g.outputs]
    ops2, _ = _without_window_slices(g, g2)
    assert [o.op for o in ops2] == [o.op for o in g.ops]
    for a, b in zip(g.ops, ops2):
        defaults = {"scale32": True, "dilation": [1, 1], "input_zp": 0, "output_zp": 0, "weight_zp": 0, "a_zp": 0, "b_zp": 0,
                    "shift": 0}
        for k, v in b.attrs.items():  # what TOSA carries; the rest says where an op came from (a table's function, ...)
            if not (k == "pad" and a.op in WINDOWS):
                want = a.attrs.get(k, defaults.get(k))
                assert v == ([int(x) for x in want] if isinstance(want, (list, tuple)) else want), (a.op, a.source, k)
        for n1, n2 in zip(a.inputs, b.inputs):
            if n1 in g.constants:
                np.testing.assert_array_equal(g2.constants[n2], g.constants[n1], err_msg=f"{a.op} {n1}")
    inputs = [program.quantize_inputs(x[None]) for x in samples] + [_random_codes(g, rng)]
    for ins in inputs:
        for n, got, want in zip(g.outputs, run_graph(g2, ins), program.run_int(*ins)):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}-{scheme} output {n}")
    assert T.describe(T.serialize(g2))["ops"] == T.describe(flatbuffer)["ops"]


def _graph(inputs: dict, outputs: dict, ops: list, consts: dict | None = None) -> Graph:
    g = Graph(inputs=list(inputs), outputs=list(outputs))
    for n, (shape, dt) in {**inputs, **outputs}.items():
        g.add_tensor(Tensor(n, shape, dt))
    for n, v in (consts or {}).items():
        g.add_tensor(Tensor(n, v.shape, dtypes.of(v).name), v)
    for op in ops:
        g.add_op(op)
    return g


def _codes(rng, shape, dt):
    lo, hi = dtypes.range_of(dt)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtypes.get(dt).np)


@pytest.mark.parametrize("dt", ["int8", "int16"])
@pytest.mark.parametrize("sy,sx", [(1, 1), (2, 2), (3, 2), (2, 5), (4, 3)])
def test_resize_nearest_floors_like_the_reference(rng, dt, sy, sx):
    """RESIZE NEAREST with scale 2s / 2, offset 1 - s and border s - 1: out[y][x] = in[y // sy][x // sx]
    (TOSA's nearest rounds half up; a plain s / 1 scale with offset 0 differs from scale 2 on)."""
    x = _codes(rng, (2, 3, 4, 5), dt)
    g = _graph({"x": (x.shape, dt)}, {"y": ((2, 3 * sy, 4 * sx, 5), dt)},
               [Op("RESIZE", ["x"], ["y"], {"mode": "NEAREST", "scale": [sy, sx]})])
    want = np.repeat(np.repeat(x, sy, axis=1), sx, axis=2)
    np.testing.assert_array_equal(run_graph(g, [x])[0], want)
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], want)


@pytest.mark.parametrize("dt", ["int8", "int16"])
def test_pad_slice_transpose_concat_reshape_match_the_reference(rng, dt):
    """PAD's interleaved before/after pairs per dim (asymmetric on every axis), SLICE's start and size,
    TRANSPOSE's perms, CONCAT on an inner axis and RESHAPE, chained."""
    x = _codes(rng, (1, 3, 4, 2), dt)
    pv = -7 if dt == "int8" else 1234
    ops = [Op("PAD", ["x"], ["p"], {"pad_before": [0, 1, 2, 0], "pad_after": [1, 0, 3, 2], "pad_value": pv}),
           Op("SLICE", ["p"], ["s"], {"start": [0, 0, 1, 1], "size": [1, 4, 7, 3]}),
           Op("TRANSPOSE", ["s"], ["t"], {"perms": [0, 3, 1, 2]}),
           Op("CONCAT", ["t", "t"], ["c"], {"axis": 2}),
           Op("RESHAPE", ["c"], ["y"], {"shape": [3, 56]})]
    g = _graph({"x": (x.shape, dt)}, {"y": ((3, 56), dt)}, ops)
    for n, shape in (("p", (2, 4, 9, 4)), ("s", (1, 4, 7, 3)), ("t", (1, 3, 4, 7)), ("c", (1, 3, 8, 7))):
        g.add_tensor(Tensor(n, shape, dt))
    (want,) = run_graph(g, [x])
    assert (want == pv).any() and (want != pv).any()
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], want)


def _fc(dt: str, rng, with_rescale: bool = True) -> tuple[Graph, np.ndarray]:
    acc = dtypes.ACC_DTYPE[dt]
    x = _codes(rng, (2, 9), dt) if dt == "int8" else rng.integers(-3000, 3000, (2, 9)).astype(np.int16)
    consts = {"w": rng.integers(-127, 127, (4, 9), endpoint=True).astype(np.int8),
              "b": rng.integers(-5000, 5000, 4).astype(dtypes.get(acc).np)}
    izp = 3 if dt == "int8" else 0
    ops = [Op("FULLY_CONNECTED", ["x", "w", "b"], ["acc"], {"input_zp": izp, "weight_zp": 0})]
    out = {"acc": ((2, 4), acc)}
    if with_rescale:
        ops.append(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": 0, "multiplier": [1 << 14], "shift": [20],
                                                  "scale32": dt == "int8"}))
        out = {"y": ((2, 4), dt)}
    g = _graph({"x": (x.shape, dt)}, out, ops, consts)
    if with_rescale:
        g.add_tensor(Tensor("acc", (2, 4), acc))
    return g, x


@pytest.mark.parametrize("dt", ["int8", "int16"])
def test_fully_connected_is_a_1x1_conv2d_and_int16_rescales_before_the_reshape(rng, dt):
    """FULLY_CONNECTED -> RESHAPE, CONV2D 1x1, RESHAPE (int8); int16: RESHAPE, CONV2D, RESCALE, RESHAPE
    (the reference model has no int48 RESHAPE), the RESCALE emitted once."""
    g, x = _fc(dt, rng)
    ops = [o for o in T.describe(T.serialize(g))["ops"] if not o.startswith("CONST")]
    assert ops == (["RESHAPE", "CONV2D", "RESHAPE", "RESCALE"] if dt == "int8" else ["RESHAPE", "CONV2D", "RESCALE", "RESHAPE"])
    (want,) = run_graph(g, [x])
    assert want.max() > want.min()
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], want)


def test_an_int16_fully_connected_without_its_rescale_is_refused_by_name(rng):
    g, _ = _fc("int16", rng, with_rescale=False)
    g.ops[0].source = "model.py:7 node fc"
    with pytest.raises(IRError, match=r"FULLY_CONNECTED \(model.py:7 node fc\): its int48 accumulator must feed exactly one RESCALE"):
        T.serialize(g)


@pytest.mark.parametrize("op", ["MAX_POOL2D", "AVG_POOL2D", "CONV2D"])
def test_windows_whose_last_rows_no_window_reads_are_sliced(rng, op):
    """Floor division (PyTorch's, the IR's): a 2x2 stride-2 window on 7x9 leaves the last row and column
    unread; TOSA wants exact division, so the serializer slices them off (or trims padding)."""
    x = _codes(rng, (1, 7, 9, 3), "int8")
    a = {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 1, 0]}
    consts, inputs = {}, ["x"]
    if op == "AVG_POOL2D":
        a.update(input_zp=-3, output_zp=5)
    if op == "CONV2D":
        a = {"stride": [2, 2], "pad": [0, 0, 1, 0], "dilation": [1, 1], "input_zp": 2, "weight_zp": 0}
        consts = {"w": rng.integers(-127, 127, (4, 2, 2, 3), endpoint=True).astype(np.int8), "b": np.arange(4, dtype=np.int32)}
        inputs = ["x", "w", "b"]
    out_dt, c = ("int32", 4) if op == "CONV2D" else ("int8", 3)
    g = _graph({"x": (x.shape, "int8")}, {"y": ((1, 3, 5, c), out_dt)}, [Op(op, inputs, ["y"], a)], consts)
    assert "SLICE" in T.describe(T.serialize(g))["ops"]
    (want,) = run_graph(g, [x])
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], want)


def test_outputs_keep_their_order_and_an_input_returned_is_an_identity(rng):
    x = _codes(rng, (2, 3), "int8")
    g = _graph({"x": ((2, 3), "int8")}, {"z": ((2, 3), "int8"), "x2": ((2, 3), "int8")},
               [Op("CLAMP", ["x"], ["x2"], {"min": -5, "max": 9}), Op("CLAMP", ["x2"], ["z"], {"min": 0, "max": 9})])
    g.outputs = ["z", "x", "x2"]
    got = T.run_graph(g, [x])
    np.testing.assert_array_equal(got[0], np.clip(x, 0, 9))
    np.testing.assert_array_equal(got[1], x)
    np.testing.assert_array_equal(got[2], np.clip(x, -5, 9))
    assert "IDENTITY" in T.describe(T.serialize(g))["ops"]


def test_tabula_tosa_writes_the_flatbuffer_of_a_build_folder(digits_program, tmp_path):
    d = digits_program.save(tmp_path / "build")
    out = tmp_path / "out" / "model.tosa"
    cmd = [sys.executable, "-m", "tabula.cli", "tosa", "--ir", str(d), "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "TOSA 1.0.0" in r.stdout and out.is_file()
    assert out.read_bytes() == T.serialize(digits_program.graph)
    r = subprocess.run(cmd[:5] + [str(tmp_path / "nothing")] + cmd[6:], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "ir.json not found" in r.stderr
