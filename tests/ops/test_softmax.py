"""Softmax, int8 and int16 (a16w8), over the random and edge sets of ``tabula.report.softmax_cases``
(uniform codes, normal logits, ties, all-equal rows, one huge logit, saturated rows, alternating
extremes; rows of 1, 2, 10, 12 and 1000; input scales tiny to large):

* bit-exactness: the fused C kernel codegen calls (``tabula_softmax_<t>``, with the constants codegen
  derives from the IR) == the IR op sequence run op by op by the reference == ``qmath.softmax_apply``;
  every op of the sequence through its own C kernel == the reference; the TOSA reference model == the
  reference on every intermediate;
* accuracy: int8 within 1 LSB of PyTorch's ``q(softmax(dq(x)))`` on every row; a16w8 within 1 LSB of
  PyTorch's and of the correctly rounded softmax on rows of up to 12, within 2 on rows of 1000 (where
  PyTorch's float32 softmax is itself up to 1.9 LSB off); both within the bound the build proves;
* the lowering: PyTorch dims to IR axes (2-D, 3-D, 4-D NCHW -> NHWC), the row-length limit, the fusion.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tabula import tosa as T
from tabula.codegen.arena import plan_arena
from tabula.codegen.fusion import FUSED_SOFTMAX, fuse_softmax
from tabula.ir import Graph, Tensor
from tabula.lowering.ops.softmax import emit_softmax
from tabula.lowering.pipeline import LoweringContext
from tabula.qmath import QuantizationError, build_softmax_plan, softmax_apply
from tabula.qmath.softmax import SOFTMAX_MAX_ROW
from tabula.reference.interpreter import run_graph
from tabula.report import softmax_cases as cases

DTYPES = ("int8", "int16")


def _plan(dtype: str, scale: float, length: int):
    s_out, zp_out, _, _ = cases.output_grid(dtype)
    return build_softmax_plan(float(np.float32(scale)), dtype, length, s_out, zp_out)


def _graph(dtype: str, scale: float, shape: tuple, axis: int) -> tuple[Graph, object]:
    """The lowered op sequence of a softmax of an input ``x`` of ``shape`` along IR ``axis``."""
    s_out, zp_out, _, _ = cases.output_grid(dtype)
    plan = _plan(dtype, scale, shape[axis])
    g = Graph()
    ctx = LoweringContext(None, g)
    x = g.add_tensor(Tensor("x", shape, dtype, float(np.float32(scale)), cases.INPUT_ZERO_POINT[dtype]))
    y = g.add_tensor(Tensor("y", shape, dtype, s_out, zp_out))
    emit_softmax(ctx, "sm", x, y, axis, plan, "test")
    g.inputs, g.outputs = ["x"], ["y"]
    return g, plan


def _fused_c(kernel_lib, g: Graph, x: np.ndarray) -> np.ndarray:
    """The fused kernel with the arguments codegen gives it (fuse_softmax's SOFTMAX op)."""
    f = fuse_softmax(g)
    (op,) = [o for o in f.ops if o.op == FUSED_SOFTMAX]
    a = op.attrs
    lo = f.constants[op.inputs[2]] if len(op.inputs) > 2 else None
    return kernel_lib.softmax(x, a["axis"], f.constants[op.inputs[1]], lo, a["split_bits"], a["exp_shift"], a["scales"],
                              a["output_zp"])


def _every_set(dtype: str, rng):
    """(scale, length, name, rows) over every scale, length and set; int16 also meets -32768 (a code
    RESCALEs may produce inside a program)."""
    for scale in cases.SCALES[dtype]:
        for length in cases.LENGTHS:
            sets = cases.rows(dtype, length, scale, rng)
            if dtype == "int16":
                sets["int16_min"] = np.stack([np.full(length, -32768), np.where(np.arange(length) == 0, 32767, -32768)]).astype(np.int16)
            for name, x in sets.items():
                yield float(np.float32(scale)), length, name, x


# ---- bit-exactness ------------------------------------------------------------------------------
@pytest.mark.host
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_c_equals_the_op_sequence_equals_the_plan(kernel_lib, rng, dtype):
    forms = set()
    for scale, length, name, x in _every_set(dtype, rng):
        g, plan = _graph(dtype, scale, x.shape, 1)
        forms.add(plan.two_level)
        (seq,) = run_graph(g, [x])
        want = softmax_apply(plan, x)
        np.testing.assert_array_equal(seq, want, err_msg=f"{scale} {length} {name}")
        np.testing.assert_array_equal(_fused_c(kernel_lib, g, x), want, err_msg=f"{scale} {length} {name}")
    assert forms == ({False} if dtype == "int8" else {False, True})  # int16: both forms met (large scales: one level)


@pytest.mark.host
@pytest.mark.parametrize("dtype,scale", [("int8", 0.05), ("int16", 1e-3), ("int16", 0.5)])
def test_every_axis_of_3d_and_4d_tensors(kernel_lib, rng, dtype, scale):
    """Rows strided in memory (an NHWC axis other than the last: the kernel's ``inner`` > 1)."""
    lo, hi = (-128, 127) if dtype == "int8" else (-32768, 32767)
    for shape in [(2, 3, 5, 7), (1, 4, 4, 10), (3, 4, 12)]:
        x = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
        x[0, 0] = hi  # a few equal maxima along every axis
        for axis in range(len(shape)):
            g, plan = _graph(dtype, scale, shape, axis)
            (seq,) = run_graph(g, [x])
            np.testing.assert_array_equal(seq, softmax_apply(plan, x, axis), err_msg=f"{shape} axis {axis}")
            np.testing.assert_array_equal(_fused_c(kernel_lib, g, x), seq, err_msg=f"{shape} axis {axis}")


@pytest.mark.host
def test_c_refuses_bad_arguments(kernel_lib):
    from tabula.harness import host as kl

    plan = _plan("int8", 0.05, 10)
    x = np.zeros((2, 10), np.int8)
    scales = [plan.q_mult, plan.q_shift, *plan.d_scale, *plan.h_scale]
    good = dict(exp_hi=plan.exp_hi, exp_lo=None, split_bits=0, exp_shift=0, scales=scales, output_zp=-128)
    np.testing.assert_array_equal(kernel_lib.softmax(x, 1, **good), softmax_apply(plan, x))
    bad = [dict(split_bits=9), dict(exp_shift=63), dict(output_zp=128), dict(scales=[scales[0], 0, *scales[2:]]),
           dict(scales=[*scales[:3], 1, *scales[4:]]), dict(scales=[*scales[:5], 63]),
           dict(exp_hi=np.full(257, 2**30))]  # a row of 10 such exps leaves int32
    for b in bad:
        with pytest.raises(kl.KernelError):
            kernel_lib.softmax(x, 1, **{**good, **b})
    with pytest.raises(kl.KernelError):  # int16 outputs have no zero point
        kernel_lib.softmax(x.astype(np.int16), 1, **{**good, "output_zp": -128})


def test_codegen_tables_are_the_plans_knots():
    for dtype, scale in (("int8", 0.05), ("int16", 1e-3), ("int16", 0.5)):
        g, plan = _graph(dtype, scale, (3, 12), 1)
        f = fuse_softmax(g)
        (op,) = f.ops
        np.testing.assert_array_equal(f.constants[op.inputs[1]], plan.exp_hi)
        if plan.two_level:
            np.testing.assert_array_equal(f.constants[op.inputs[2]], plan.exp_lo)
            assert op.attrs["split_bits"] == plan.split_bits and op.attrs["exp_shift"] == plan.exp_shift
        assert op.attrs["scales"] == [plan.q_mult, plan.q_shift, *plan.d_scale, *plan.h_scale]


def _run_c_ops(kernel_lib, g: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every op of the sequence through its own C kernel (host build), in order."""
    vals = {"x": x, **g.constants}
    for op in g.ops:
        a = [vals[n] for n in op.inputs]
        at = op.attrs
        if op.op == "RESCALE":
            out = kernel_lib.rescale(a[0], input_zp=at["input_zp"], output_zp=at["output_zp"], multiplier=at["multiplier"],
                                     shift=at["shift"], output_dtype=g.tensors[op.outputs[0]].dtype)
        elif op.op == "REDUCE_MAX":
            out = kernel_lib.reduce_max(a[0], at["axis"])
        elif op.op == "REDUCE_SUM":
            out = kernel_lib.reduce_sum(a[0], at["axis"])
        elif op.op == "TILE":
            out = kernel_lib.tile(a[0], at["multiples"])
        elif op.op == "TABLE":
            out = kernel_lib.table(a[0], a[1])
        elif op.op == "MUL":
            out = kernel_lib.mul(a[0], a[1], at.get("shift", 0))
        else:
            out = {"ADD": kernel_lib.add, "SUB": kernel_lib.sub, "INTDIV": kernel_lib.intdiv}[op.op](a[0], a[1])
        vals[op.outputs[0]] = out
    return vals


@pytest.mark.host
@pytest.mark.parametrize("dtype,scale", [("int8", 0.05), ("int8", 2.0**-12), ("int16", 1e-3), ("int16", 1e-7), ("int16", 0.5)])
def test_every_op_of_the_sequence_in_c_equals_the_reference(kernel_lib, rng, dtype, scale):
    x = np.concatenate(list(cases.rows(dtype, 12, scale, rng, n=8).values()))
    g, _ = _graph(dtype, scale, x.shape, 1)
    g.outputs = [o.outputs[0] for o in g.ops]
    ref = dict(zip(g.outputs, run_graph(g, [x])))
    c = _run_c_ops(kernel_lib, g, x)
    for n in g.outputs:
        np.testing.assert_array_equal(c[n], ref[n], err_msg=n)
    assert {o.op for o in g.ops} >= {"REDUCE_MAX", "TILE", "SUB", "RESCALE", "TABLE", "ADD", "REDUCE_SUM", "MUL", "INTDIV"}


@pytest.mark.tosa
@pytest.mark.parametrize("dtype,scale,shape,axis", [("int8", 0.05, (16, 10), 1), ("int8", 0.5, (2, 5, 3, 4), 2),
                                                    ("int16", 1e-3, (16, 12), 1), ("int16", 0.5, (16, 12), 1),
                                                    ("int16", 2.0**-15, (2, 3, 7), 1)])
def test_tosa_reference_model_equals_the_reference(rng, dtype, scale, shape, axis):
    """The whole op sequence, every intermediate, on the official TOSA reference model (tosa-tools)."""
    lo, hi = (-128, 127) if dtype == "int8" else (-32768, 32767)
    x = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    x.reshape(-1)[:2] = [lo, hi]
    g, _ = _graph(dtype, scale, shape, axis)
    g.outputs = [o.outputs[0] for o in g.ops]
    ref = run_graph(g, [x])
    tosa = T.run_graph(g, [x])
    for n, r, t in zip(g.outputs, ref, tosa):
        np.testing.assert_array_equal(t, r, err_msg=n)


# ---- accuracy -----------------------------------------------------------------------------------
def _errors(dtype: str, rng) -> dict:
    """Per row kind (``short``: 1 to 12 elements, ``long``: 1000) the max error in output LSB over every
    set and scale: vs PyTorch, vs the exact softmax, vs it rounded; the largest excess of the error vs
    exact over the proven bound; and PyTorch's own error vs exact."""
    _, _, qmin, qmax = cases.output_grid(dtype)
    worst = {k: {"torch": 0, "exact": 0.0, "rounded": 0, "over_bound": -np.inf, "torch_own": 0.0} for k in ("short", "long")}
    for scale, length, name, x in _every_set(dtype, rng):
        if name == "int16_min":
            continue  # not an input PyTorch's int16 grid [-32767, 32767] produces
        plan = _plan(dtype, scale, length)
        y = softmax_apply(plan, x).astype(np.int64)
        t = cases.torch_reference(x, scale, cases.INPUT_ZERO_POINT[dtype], dtype).astype(np.int64)
        ex = cases.exact_reference(x, scale)
        exc = np.clip(ex, qmin, qmax)
        w = worst["long" if length > 12 else "short"]
        w["torch"] = max(w["torch"], int(np.abs(y - t).max()))
        w["exact"] = max(w["exact"], float(np.abs(y - exc).max()))
        w["rounded"] = max(w["rounded"], int(np.abs(y - np.clip(np.rint(ex), qmin, qmax)).max()))
        w["over_bound"] = max(w["over_bound"], float(np.abs(y - exc).max()) - plan.error_bound_lsb)
        w["torch_own"] = max(w["torch_own"], float(np.abs(t - exc).max()))
    return worst


def test_int8_within_1_lsb_of_pytorch_on_every_row(rng):
    for w in _errors("int8", rng).values():
        assert w["torch"] <= 1 and w["rounded"] <= 1
        assert w["exact"] <= 0.51  # the exps are exact to 2^-22: what remains is the final rounding
        assert w["over_bound"] <= 1e-9


def test_a16w8_error_is_pinned(rng):
    """Rows of up to 12: within 1 LSB of PyTorch and of round(softmax), at most 0.8 LSB from the exact
    softmax (proven: < 0.95).  Rows of 1000: the int32 sum leaves each exp 21 bits, and the rounding of
    many equal differences adds up: up to 2 LSB (1.6 from exact), where PyTorch's float32 softmax is
    itself up to ~1.9 LSB off."""
    w = _errors("int16", rng)
    short, long = w["short"], w["long"]
    assert short["torch"] <= 1 and short["rounded"] <= 1 and short["exact"] <= 0.8
    assert long["torch"] <= 2 and long["rounded"] <= 2 and long["exact"] <= 2.0
    assert short["over_bound"] <= 1e-9 and long["over_bound"] <= 1e-9
    assert long["torch_own"] > 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_short_rows_are_proven_within_1_lsb(dtype):
    """For the classifier rows (2 to 12 classes) the bound itself is below 1.5 LSB at every scale: the
    output is within 1 LSB of the correctly rounded softmax by proof, not only on the sets."""
    for scale in np.logspace(-9, 2, 23):
        for length in (2, 10, 12):
            assert _plan(dtype, float(scale), length).error_bound_lsb < (0.51 if dtype == "int8" else 0.95)


def test_a_row_too_long_is_refused_with_the_limit_and_the_fix():
    for dtype in DTYPES:
        limit = SOFTMAX_MAX_ROW[dtype]
        assert _plan(dtype, 0.01, limit).error_bound_lsb < 1.49 * (1 if dtype == "int8" else 128)
        with pytest.raises(QuantizationError, match=rf"at most {limit} elements in {dtype}.*Shorten the softmax"):
            _plan(dtype, 0.01, limit + 1)


def test_bad_scales_are_refused():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(QuantizationError, match="positive finite"):
            build_softmax_plan(bad, "int8", 10, 1 / 256, -128)
    with pytest.raises(QuantizationError, match="int8 or int16"):
        build_softmax_plan(0.1, "int32", 10, 1 / 256, -128)
    with pytest.raises(QuantizationError, match="finer than 2"):
        build_softmax_plan(0.1, "int16", 10, 2.0**-30, 0)


# ---- the lowering: PyTorch dims, layouts, the up-front limit --------------------------------------
class _Softmax(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, self.dim)


class _Dims(torch.nn.Module):
    """Softmax over every dim of a 4-D (NCHW), a 3-D and a 2-D input, in the spellings PyTorch has."""

    def forward(self, x4, x3, x2):
        return (torch.softmax(x4, -1), torch.softmax(x4, 1), torch.softmax(x4, 2), x3.softmax(dim=-1),
                torch.nn.Softmax(dim=1)(x3), torch.softmax(x2, -1), torch.nn.functional.softmax(x2, dim=1))


#: IR axis of each output of _Dims: NCHW dim 3 (W) -> NHWC axis 2, dim 1 (C) -> 3, dim 2 (H) -> 1;
#: 3-D and 2-D tensors keep PyTorch's layout.
_DIMS_AXES = [2, 3, 1, 2, 1, 1, 1]


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_pytorch_dims_map_to_ir_axes(scheme):
    """Softmax of model inputs: the program equals PT2E's simulation (q(softmax(dq(x))) in float32) --
    int8 exactly on these inputs (1 LSB allowed), int16 within 1 LSB -- in PyTorch's layout, so each
    NHWC axis is the right one."""
    import tabula

    torch.manual_seed(0)
    xs = [torch.randn(8, 2, 3, 5, 7) * 4, torch.randn(8, 3, 4, 12) * 4, torch.randn(8, 4, 10) * 4]
    example = tuple(x[0] for x in xs)
    gm = tabula.quantize(_Dims(), example, [tuple(x[i] for x in xs) for i in range(8)], scheme=scheme)
    prog = tabula.lower(gm, example)
    assert [o.attrs["softmax"]["axis"] for o in prog.graph.ops if "softmax" in o.attrs] == _DIMS_AXES
    for i in range(0, 8, 3):
        sample = tuple(x[i] for x in xs)
        for qp, got, want in zip(prog.output_qparams, prog.run(*sample), gm(*sample)):
            assert (qp.scale, qp.zero_point) == ((1 / 256, -128) if scheme == "int8" else (pytest.approx(1 / 32767), 0))
            assert got.shape == tuple(want.shape)
            assert np.abs(got - want.detach().numpy()).max() / qp.scale <= 1 + 1e-3


def test_a_too_long_softmax_is_listed_before_calibration():
    import tabula
    from tabula.errors import UnsupportedOpError

    x = torch.randn(1, 5000)
    calls = []

    def calibration():
        calls.append(1)
        yield (x,)

    with pytest.raises(UnsupportedOpError, match=r"rows of 5000 elements in int8.*at most 4000") as e:
        tabula.quantize(_Softmax(-1), (x,), calibration(), scheme="int8")
    assert not calls and len(e.value.ops) == 1
    with pytest.raises(UnsupportedOpError, match="at most 2048 elements in int16"):
        tabula.quantize(_Softmax(-1), (x[:, :3000],), calibration(), scheme="a16w8")
    tabula.quantize(_Softmax(-1), (x[:, :3000],), [(x[:, :3000],)], scheme="int8")  # int8 takes 3000


# ---- codegen ------------------------------------------------------------------------------------
def test_the_sequence_fuses_to_one_op_and_frees_its_intermediates():
    for dtype, scale in (("int8", 0.05), ("int16", 1e-3), ("int16", 0.5)):
        g, _ = _graph(dtype, scale, (1, 4, 4, 10), 3)
        f = fuse_softmax(g)
        assert [o.op for o in f.ops] == [FUSED_SOFTMAX] and f.ops[0].outputs == ["y"] and f.ops[0].inputs[0] == "x"
        assert len(g.ops) in (19, 28)  # the IR itself keeps the TOSA ops
        internal = set(g.ops[0].attrs["softmax"]["internal"])
        assert internal and not internal & set(f.tensors)
        assert not any(n.startswith("sm_") for n in f.constants)  # the TABLEs and Qc went with the sequence
        itemsize = 1 if dtype == "int8" else 2
        assert plan_arena(f).size == 2 * max(16, 160 * itemsize) < plan_arena(g).size  # x and y only


def test_a_sequence_whose_intermediate_is_read_elsewhere_is_left_alone():
    g, _ = _graph("int8", 0.05, (2, 10), 1)
    g.outputs = ["y", g.ops[0].attrs["softmax"]["internal"][3]]  # the host reads d
    assert fuse_softmax(g) is g


def test_generated_c_calls_the_fused_kernel(tmp_path):
    from tabula.codegen import generate

    g, _ = _graph("int16", 1e-3, (2, 12), 1)
    c = generate(g, tmp_path).model_c.read_text()
    assert c.count("tabula_softmax_s16(") == 1
    for k in ("tabula_intdiv_s32(", "tabula_reduce_sum_s32(", "tabula_table_s16(", "tabula_tile("):
        assert k not in c
