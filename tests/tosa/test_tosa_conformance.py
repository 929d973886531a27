"""TOSA conformance: every table op of ``rules.TABLE`` (tests/table_cases.py), int8 and int16, on every
input code: our C kernels (host build) == our Python reference == the official TOSA reference model
(tosa-tools), and the int8 table == PyTorch's q(f(dq(c))).  RESCALE with the attributes our IR uses
(per-channel, zero points, scale32 true/false, single rounding) likewise."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import run_table_graph_c
from tabula import dtypes, qmath, rules
from tabula import tosa as T
from tabula.ir import Graph, Op, Tensor
from tabula.reference.interpreter import InterpreterError, run_graph
from tabula.report.table_cases import CASES, build, build_plan, table_op_graph
from tabula.qmath.piecewise import STEPS_INT16
from tabula.report.tables import table_of

pytestmark = pytest.mark.tosa

ALL = {"int8": np.arange(-128, 128, dtype=np.int8), "int16": np.arange(-32768, 32768, dtype=np.int16)}


def test_cases_cover_every_table_op():
    assert {c.function for c in CASES} == set(rules.TABLE)


@pytest.mark.host
@pytest.mark.parametrize("form", ["int8", "int16", "int16-other"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_c_equals_reference_equals_tosa(case, form, kernel_lib):
    """Every intermediate and the result, on every input code, and for int16 the fused C kernel codegen
    calls instead of the op sequence (tabula_table16_s16).  ``int16``: the form the lowering picks
    (tiled with shift TABLEs for the singular ops, exact ramps -- CLAMP, RESCALE, SUB, MUL -- for the
    piecewise-linear ones); ``int16-other``: the split zoomed pair (RESCALE int16 -> int16, four
    TABLEs, ADDs, RESCALE x 2^7 and x 2^-14), or one table where the lowering picks that."""
    dtype = form[:5]
    if form == "int16-other" and case.function in STEPS_INT16:
        pytest.skip("a step function has no interpolated-table form (a jump inside a segment); its one int16 form is the exact steps")
    if form == "int16-other":
        chosen = build_plan(case)[0].form
        try:
            g = table_op_graph(case, dtype, form="zoom1+split" if chosen != "zoom1+split" else "single")
        except qmath.QuantizationError as e:  # e.g. log: its -inf end leaves no room for the zoomed sum
            assert "REQUIRE" in str(e) or "int32" in str(e)
            g = table_op_graph(case, dtype, form="split" if chosen != "split" else "single")
    else:
        g = table_op_graph(case, dtype)
    x = ALL[dtype]
    if dtype == "int16":
        g.outputs = [o.outputs[0] for o in g.ops]  # every intermediate and the int16 result
        assert g.outputs[-1] == "y"
        ref = dict(zip(g.outputs, run_graph(g, [x])))
        tosa = dict(zip(g.outputs, T.run_graph(g, [x])))
        c = run_table_graph_c(g, x, kernel_lib)
        for n in g.outputs:
            np.testing.assert_array_equal(tosa[n], ref[n], err_msg=n)
            np.testing.assert_array_equal(c[n], ref[n], err_msg=n)
        head = next(o for o in g.ops if "function" in o.attrs)  # the group's first op
        np.testing.assert_array_equal(qmath.table16_apply(table_of(g, head), x), ref["y"])
        np.testing.assert_array_equal(kernel_lib.table16(x, table_of(g, head)), ref["y"])  # the fused C
        assert ref["y"].dtype == np.int16
    else:
        table = g.constants["table"]
        (ref_y,) = run_graph(g, [x])
        (tosa_y,) = T.run_graph(g, [x])
        np.testing.assert_array_equal(tosa_y, ref_y)
        np.testing.assert_array_equal(kernel_lib.table(x, table), ref_y)
        np.testing.assert_array_equal(ref_y, table)  # every code, in order


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_int8_table_is_torch_q_f_dq(case):
    """table[c + 128] == quantize(f(dequantize(c))) with PyTorch's own q/dq ops, for every code whose
    input lies inside the op's domain (outside it PyTorch gives NaN; we give f at the edge)."""
    import torchao.quantization.pt2e  # noqa: F401  registers quantized_decomposed

    table, (s_in, zp_in), (s_out, zp_out) = build(case, "int8")
    qd = torch.ops.quantized_decomposed
    codes = torch.arange(-128, 128, dtype=torch.int8)
    x = qd.dequantize_per_tensor(codes, s_in, zp_in, -128, 127, torch.int8)
    y = rules.TABLE[case.function](x, *case.args, **case.kwargs)
    want = qd.quantize_per_tensor(y, s_out, zp_out, -128, 127, torch.int8).numpy()
    inside = np.ones(256, bool)
    if case.dom is not None:
        inside = (x.numpy() >= case.dom[0]) & (x.numpy() <= case.dom[1])
    assert inside.sum() > 128  # (acosh: the observer keeps 0 in the range, so x in [0, 1) is outside)
    np.testing.assert_array_equal(table[inside], want[inside])


def _rescale_graph(x, out_dtype, multiplier, shift, input_zp, output_zp, scale32=True) -> Graph:
    """RESCALE of ``x``; an int64 (TOSA int48) ``x`` is a constant of the graph, because the reference
    model's Python binding refuses int48 placeholders ("Invalid inputs.")."""
    g = Graph()
    x_dtype, shape = str(x.dtype), x.shape
    g.add_tensor(Tensor("x", shape, x_dtype, 1.0, input_zp), x if x_dtype == "int64" else None)
    g.add_tensor(Tensor("y", shape, out_dtype, 1.0, output_zp))
    g.add_op(Op("RESCALE", ["x"], ["y"], {"input_zp": input_zp, "output_zp": output_zp, "multiplier": list(multiplier),
                                          "shift": list(shift), "scale32": scale32}))
    g.inputs, g.outputs = ([] if x_dtype == "int64" else ["x"]), ["y"]
    return g


RESCALES = [  # (in dtype, out dtype, per-channel, input_zp, output_zp, scale32)
    ("int32", "int8", True, 0, -7, True),
    ("int32", "int8", False, 0, 5, True),
    ("int8", "int8", False, 3, -9, True),
    ("int8", "int32", True, -4, 0, True),
    ("int16", "int16", True, 0, 0, True),
    ("int32", "int16", False, 0, 0, True),
    ("int16", "int32", False, 0, 0, True),
    ("int32", "int32", True, 0, 0, True),
    ("int32", "int32", False, 0, 0, True),
    ("int64", "int16", True, 0, 0, False),
]


@pytest.mark.host
@pytest.mark.parametrize("in_dt,out_dt,per_channel,izp,ozp,scale32", RESCALES,
                         ids=[f"{a}-{b}-{'pc' if p else 'pt'}" for a, b, p, *_ in RESCALES])
def test_rescale_matches_tosa(in_dt, out_dt, per_channel, izp, ozp, scale32, rng, kernel_lib):
    c = 5 if per_channel else 1
    lo, hi = dtypes.range_of(in_dt)
    if in_dt == "int64":
        lo, hi = -(2**38), 2**38  # TOSA REQUIREs apply_scale_16 results to fit int32 (2^38 * 2^-8 does)
    x = rng.integers(lo, hi, (7, 5), endpoint=True, dtype=np.int64).astype(in_dt)
    x.reshape(-1)[:2] = [lo, hi]  # the range ends
    scales = rng.uniform(2.0**-14, 2.0, c) if in_dt in ("int8", "int16") else rng.uniform(2.0**-30, 2.0**-8, c)
    q = qmath.quantize_multiplier if scale32 else qmath.quantize_multiplier_16
    m, s = zip(*(q(float(v)) for v in scales))
    g = _rescale_graph(x, out_dt, m, s, izp, ozp, scale32)
    inputs = [] if in_dt == "int64" else [x]
    (ref,) = run_graph(g, inputs)
    (got,) = T.run_graph(g, inputs)
    assert got.dtype == ref.dtype == np.dtype(out_dt)
    np.testing.assert_array_equal(got, ref)
    try:
        c_out = kernel_lib.rescale(x, input_zp=izp, output_zp=ozp, multiplier=m, shift=s, output_dtype=out_dt)
    except TypeError:  # no C kernel for this dtype pair
        return
    np.testing.assert_array_equal(c_out, ref)


@pytest.mark.host
def test_rescale_up_by_2_to_7_is_exact_and_the_shift_require_matches_tosa(kernel_lib):
    """The split int16 table's RESCALE int32 -> int32 x 2^7: exact over the whole 16.7 range, and one
    past it both the TOSA reference model and our reference refuse it (apply_scale_32's REQUIRE that
    the value lie within +-2^(shift-1))."""
    m, s = qmath.TABLE16_SPLIT_SHIFT_UP
    x = np.array([-(2**22), -(2**22) + 1, -1, 0, 1, 12345, 2**22 - 1], np.int32)
    g = _rescale_graph(x, "int32", [m], [s], 0, 0)
    expected = x.astype(np.int64) * 2**qmath.TABLE16_FRAC_BITS
    np.testing.assert_array_equal(run_graph(g, [x])[0], expected)
    np.testing.assert_array_equal(T.run_graph(g, [x])[0], expected)
    np.testing.assert_array_equal(kernel_lib.rescale(x, input_zp=0, output_zp=0, multiplier=[m], shift=[s],
                                                     output_dtype="int32"), expected)
    for bad in (2**22, -(2**22) - 1):
        xb = np.array([0, bad], np.int32)
        with pytest.raises(T.TosaError, match="UNPREDICTABLE"):
            T.run_graph(_rescale_graph(xb, "int32", [m], [s], 0, 0), [xb])
        with pytest.raises(InterpreterError, match="REQUIRE"):
            run_graph(_rescale_graph(xb, "int32", [m], [s], 0, 0), [xb])


def test_tosa_rejects_int16_slope_outside_int16_like_our_reference():
    t = np.zeros(513, np.int16)
    t[100], t[101] = 32767, -32768
    g = table_op_graph(CASES[1], "int16", shape=(2,), form="single")
    g.constants[g.ops[0].inputs[1]] = t
    x = np.array([100 * 128 - 32768 + 1, 100 * 128 - 32768 + 2], np.int16)
    with pytest.raises(T.TosaError, match="UNPREDICTABLE"):
        T.run_graph(g, [x])
    with pytest.raises(InterpreterError, match="slope"):
        run_graph(g, [x])


def test_every_ir_op_serializes_and_an_op_without_a_mapping_is_named(monkeypatch):
    """Every IR op's spec has a TOSA mapping; a graph with an op whose spec has none is refused naming it."""
    import types

    import tabula.reference.ops as ops_pkg
    from tabula import ir
    from tabula.ir import IRError

    assert set(T.supported_ops()) == set(ir.OPS)
    spec = types.ModuleType("tabula.reference.ops.no_tosa")
    spec.OP = "NO_TOSA"
    monkeypatch.setattr(ops_pkg, "_SPECS", {**ops_pkg.specs(), "NO_TOSA": spec})
    g = Graph()
    g.add_tensor(Tensor("x", (2, 3), "int8", 1.0, 0))
    g.add_tensor(Tensor("y", (2, 3), "int8", 1.0, 0))
    g.add_op(Op("NO_TOSA", ["x"], ["y"], {}))
    g.inputs, g.outputs = ["x"], ["y"]
    with pytest.raises(IRError, match="no TOSA serialization for IR ops NO_TOSA"):
        T.serialize(g)


class _Arith(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


_C = torch.tensor([1.5, -0.25, 3.0, 0.1, -2.0, 0.6])
ARITHMETIC = {  # lowered to RESCALE / ADD / SUB / MUL / TABLE only (no layout change), so TOSA can run them
    "bcast-add": (lambda x, y: x + y, [(1, 3, 4, 6), (1, 3, 1, 6)]),
    "bcast-sub-both": (lambda x, y: x - y, [(2, 1, 6), (1, 5, 1)]),
    "bcast-mul": (lambda x, y: x * y, [(2, 5, 6), (1, 1, 6)]),
    "const-mul-shift": (lambda x: x * _C, [(2, 5, 6)]),
    "const-div": (lambda x: x / _C, [(2, 5, 6)]),
    "scalar-rsub": (lambda x: 2.5 - x, [(2, 5, 6)]),
    "scalar-add": (lambda x: x + 1e3, [(2, 5, 6)]),
    "neg": (lambda x: -x, [(2, 5, 6)]),
}


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
@pytest.mark.parametrize("case", list(ARITHMETIC))
def test_arithmetic_lowerings_match_tosa(case, scheme, rng, kernel_lib):
    """The programs the arithmetic lowering emits (broadcasting ADD / SUB / MUL, MUL with a shift and
    a 30-bit constant, int32 constants broadcast from [1, ..., 1]): our reference == the TOSA reference
    model == our C kernels op by op, on random codes and on every input's range ends."""
    import tabula

    fn, shapes = ARITHMETIC[case]
    torch.manual_seed(0)
    calib = [tuple(torch.randn(*s) * 3 for s in shapes) for _ in range(8)]
    program = tabula.lower(tabula.quantize(_Arith(fn), calib[0], calib, scheme=scheme))
    g = program.graph
    assert {o.op for o in g.ops} <= {"RESCALE", "ADD", "SUB", "MUL", "TABLE"}
    inputs = []
    for n in g.inputs:
        t = g.tensors[n]
        lo, hi = dtypes.range_of(t.dtype)
        x = rng.integers(lo, hi, t.shape, endpoint=True).astype(t.np_dtype)
        x.reshape(-1)[:2] = [lo, hi]
        inputs.append(x)
    ref = run_graph(g, inputs)
    np.testing.assert_array_equal(T.run_graph(g, inputs)[0], ref[0])
    vals = {**g.constants, **dict(zip(g.inputs, inputs))}
    for op in g.ops:
        a = vals[op.inputs[0]]
        if op.op == "RESCALE":
            at = op.attrs
            out = kernel_lib.rescale(a, input_zp=at["input_zp"], output_zp=at["output_zp"], multiplier=at["multiplier"],
                                     shift=at["shift"], output_dtype=g.tensors[op.outputs[0]].dtype)
        elif op.op == "TABLE":  # int8 scalar arithmetic
            out = kernel_lib.table(a, vals[op.inputs[1]])
        else:
            b = vals[op.inputs[1]]
            extra = (op.attrs.get("shift", 0),) if op.op == "MUL" else ()
            out = getattr(kernel_lib, f"{op.op.lower()}_bcast")(a, b, *extra)
        vals[op.outputs[0]] = out
    np.testing.assert_array_equal(vals[g.outputs[0]], ref[0])


MATMULS = [("int8", 0, 0), ("int8", -128, 127), ("int8", 127, -5), ("int16", 0, 0)]


@pytest.mark.host
@pytest.mark.parametrize("dtype,a_zp,b_zp", MATMULS, ids=[f"{d}-{a}-{b}" for d, a, b in MATMULS])
def test_matmul_matches_tosa(dtype, a_zp, b_zp, rng, kernel_lib):
    """MATMUL [N,H,C] x [N,C,W] with zero points: our reference == the TOSA reference model == our C.
    The reference model's Python binding cannot return int48 tensors, so the int16 MATMUL is followed
    by an exact RESCALE int48 -> int32 (x 2^14 / 2^14) on values whose sums fit int32."""
    lo, hi = (-128, 127) if dtype == "int8" else (-2000, 2000)
    a = rng.integers(lo, hi, (2, 3, 7), endpoint=True).astype(dtype)
    b = rng.integers(lo, hi, (2, 7, 4), endpoint=True).astype(dtype)
    a.reshape(-1)[0], b.reshape(-1)[0] = lo, lo
    acc = "int32" if dtype == "int8" else "int48"
    g = Graph()
    g.add_tensor(Tensor("a", a.shape, dtype, 1.0, a_zp))
    g.add_tensor(Tensor("b", b.shape, dtype, 1.0, b_zp))
    g.add_tensor(Tensor("acc", (2, 3, 4), acc, 1.0))
    g.add_op(Op("MATMUL", ["a", "b"], ["acc"], {"a_zp": a_zp, "b_zp": b_zp}))
    g.inputs, g.outputs = ["a", "b"], ["acc"]
    if acc == "int48":
        g.add_tensor(Tensor("y", (2, 3, 4), "int32", 1.0))
        g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": 0, "multiplier": [2**14], "shift": [14],
                                                "scale32": False}))
        g.outputs = ["y"]
    (ref,) = run_graph(g, [a, b])
    (got,) = T.run_graph(g, [a, b])
    np.testing.assert_array_equal(got, ref)
    want = (a.astype(np.int64) - a_zp) @ (b.astype(np.int64) - b_zp)
    np.testing.assert_array_equal(ref, want)
    np.testing.assert_array_equal(kernel_lib.matmul(a, b, a_zp=a_zp, b_zp=b_zp), want)
def test_clamp_serializes_and_matches_tosa():
    """CLAMP int16 (the ramps of the exact piecewise-linear ops clamp x before their RESCALE): the TOSA
    reference model agrees with ours on every code, equal bounds (a constant) included."""
    x = ALL["int16"]
    for lo, hi in ((-1200, 3400), (16384, 16384), (-32768, 0)):
        g = Graph()
        g.add_tensor(Tensor("x", x.shape, "int16", 1.0, 0))
        g.add_tensor(Tensor("y", x.shape, "int16", 1.0, 0))
        g.add_op(Op("CLAMP", ["x"], ["y"], {"min": lo, "max": hi}))
        g.inputs, g.outputs = ["x"], ["y"]
        np.testing.assert_array_equal(T.run_graph(g, [x])[0], run_graph(g, [x])[0])
