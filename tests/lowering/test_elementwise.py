"""Elementwise ops as a new user writes them: scalars, constants and broadcasting in add / sub / mul /
rsub / neg / div, identity ops, constants as operands -- the lowered program against PT2E's own
quantized graph (the converted GraphModule run in float), int8 and a16w8, and the model zoo of these
cases built and run on the host, bit-exact, with every output's figures in the report."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from fixtures.elementwise_model import ElementwiseZoo, export_elementwise
from helpers import scons
from tabula.report import sqnr_db

SCHEMES = ["int8", "a16w8"]


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _compare(model, shapes, scheme, n_calib=24, n_test=8, seed=0):
    """(program, [max |program - pt2e| in output LSB], [fraction of elements that differ]) per output
    over ``n_test`` random samples; the calibration samples are others."""
    torch.manual_seed(seed)
    calib = [tuple(torch.randn(*s) * 2 for s in shapes) for _ in range(n_calib)]
    test = [tuple(torch.randn(*s) * 2 for s in shapes) for _ in range(n_test)]
    gm = tabula.quantize(model.eval(), calib[0], calib, scheme=scheme)
    program = tabula.lower(gm)
    diffs = []
    for xs in test:
        with torch.no_grad():
            want = gm(*xs)
        want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else (want,))]
        got = program.run(*xs)
        diffs.append([np.abs(g - w) / qp.scale for g, w, qp in zip(got, want, program.output_qparams)])
    per_output = [np.concatenate([d[k].reshape(-1) for d in diffs]) for k in range(len(diffs[0]))]
    return program, [float(d.max()) for d in per_output], [float((d > 0.5).mean()) for d in per_output]


# -- scalars -------------------------------------------------------------------------------------
SCALAR_CASES = {  # the a16w8 program; int8 is one TABLE for every case
    "x * 0.5": (lambda x: x * 0.5, ["RESCALE"]),
    "x / 3": (lambda x: x / 3.0, ["RESCALE"]),
    "x * 1e6": (lambda x: x * 1e6, ["RESCALE"]),
    "x + 1": (lambda x: x + 1, ["RESCALE", "ADD", "RESCALE"]),
    "x - 1e-4": (lambda x: x - 1e-4, ["RESCALE", "ADD", "RESCALE"]),
    "x + 1e4": (lambda x: x + 1e4, ["RESCALE", "ADD", "RESCALE"]),
    "2 - x": (lambda x: 2 - x, ["RESCALE", "SUB", "RESCALE"]),
    "rsub(x, 2, alpha=3)": (lambda x: torch.rsub(x, 2, alpha=3), ["RESCALE", "SUB", "RESCALE"]),
    "-x": (lambda x: -x, ["RESCALE", "MUL", "RESCALE"]),
    "x * -0.25": (lambda x: x * -0.25, ["RESCALE", "MUL", "RESCALE"]),
    "x * x": (lambda x: x * x, ["RESCALE", "MUL", "RESCALE"]),
}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("case", list(SCALAR_CASES))
def test_scalar_operands_lower_to_rescales_and_match_pt2e(case, scheme):
    """int8: one TABLE of the op over every code, equal to PT2E's quantized graph on every element.
    a16w8: a positive factor is one RESCALE (one rounding, no int32 tensor); an offset or a sign is
    RESCALE, ADD/SUB/MUL with an int32 constant, RESCALE -- equal to PT2E's graph but at ties (a
    single rounding of the exact value vs float32)."""
    fn, ops = SCALAR_CASES[case]
    program, worst, differ = _compare(_Fn(fn), [(1, 2, 8)], scheme)
    if scheme == "int8":
        assert [o.op for o in program.graph.ops] == ["TABLE"]
        assert worst[0] == 0.0
    else:
        assert [o.op for o in program.graph.ops] == ops
        assert worst[0] <= 1.001 and differ[0] <= 0.01, (worst, differ)


# -- broadcasting of activations, several inputs ----------------------------------------------
BROADCAST = [
    ((1, 3, 4, 5), (1, 3, 1, 1), "add"),  # per-channel
    ((1, 3, 4, 5), (1, 3, 1, 1), "mul"),
    ((1, 3, 4, 5), (1, 1, 4, 5), "sub"),  # per-pixel
    ((1, 1, 4, 5), (1, 3, 1, 1), "mul"),  # both sides
    ((1, 3, 4, 5), (3, 4, 5), "add"),  # lower rank, channels move to NHWC (RESHAPE + TRANSPOSE)
    ((1, 3, 4, 5), (5,), "sub"),  # lower rank along W
    ((2, 7, 6), (6,), "mul"),  # [B, T, C] * [C]
    ((2, 7, 6), (2, 1, 6), "sub"),
    ((4, 6), (4, 1), "add"),
]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("sa, sb, op", BROADCAST)
def test_broadcasting_of_two_inputs_matches_pt2e(sa, sb, op, scheme):
    """NumPy broadcasting between two model inputs (the Python API takes several inputs), with the
    NCHW -> NHWC mapping of 4-D tensors; also the operands swapped."""
    fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul}[op]
    for shapes in ((sa, sb), (sb, sa)):
        program, worst, differ = _compare(_Fn(fn), list(shapes), scheme, n_calib=16, n_test=4)
        assert len(program.input_qparams) == 2
        assert {"ADD", "SUB", "MUL"} & {o.op for o in program.graph.ops}
        assert worst[0] <= 1.001 and differ[0] <= 0.02, (shapes, worst, differ)


# -- constants ---------------------------------------------------------------------------------
class _Constants(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.register_buffer("offset", torch.randn(1, 3, 4, 5))
        self.register_buffer("first", torch.randn(1, 2, 4, 5))
        self.scale = nn.Parameter(torch.rand(3) + 0.5)
        self.register_buffer("divisor", torch.tensor([2.0, -0.5, 4.0, 1.5, -3.0]))
        self.gate = nn.Parameter(torch.randn(5))

    def forward(self, x):
        a = x * self.scale.view(1, 3, 1, 1) + self.offset  # a parameter viewed (folded), a buffer added
        b = torch.cat([self.first, torch.relu(a)], dim=1)  # a buffer first in a cat
        c = torch.cat([a, self.first], dim=1)  # ... and second
        d = x / self.divisor * torch.sigmoid(self.gate)  # a constant divisor; sigmoid(param) is folded
        return b, c, d


@pytest.mark.parametrize("scheme", SCHEMES)
def test_constants_as_operands(scheme):
    program, worst, differ = _compare(_Constants(), [(1, 3, 4, 5)], scheme)
    ops = [o.op for o in program.graph.ops]
    assert ops.count("CONCAT") == 2 and "TABLE" not in ops  # sigmoid(gate) ran at build time
    consts = [t for t in program.graph.tensors.values() if t.const]
    cat_consts = [t for t in consts if t.dtype == ("int8" if scheme == "int8" else "int16")]
    assert {t.shape for t in cat_consts} == {(1, 4, 5, 2)}  # the buffer, NHWC, on the cat's grid
    assert all(w <= 1.001 for w in worst) and max(differ) <= 0.02, (worst, differ)


def test_constant_subgraphs_are_folded_before_quantization():
    from tabula.quantizer import capture, passes

    m = _Constants().eval()
    gm = capture(m, (torch.randn(1, 3, 4, 5),))
    for _, run_pass in passes():
        run_pass(gm)
    names = {tabula.rules.canonical_op(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert "aten.sigmoid" not in names and "aten.view" not in names  # computed once, on the host
    x = torch.randn(1, 3, 4, 5)
    for a, b in zip(gm(x), m(x)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# -- identity ops --------------------------------------------------------------------------------
class _Identities(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.ident = nn.Identity()

    def forward(self, x):
        y = torch.relu(x).clone().detach().contiguous()
        y = self.drop(self.ident(y)).to(torch.float32)
        return torch.ops.aten.alias(y.transpose(1, 2).contiguous()) * 2


@pytest.mark.parametrize("scheme", SCHEMES)
def test_identity_ops_share_the_producers_grid_and_cost_nothing(scheme):
    """clone, contiguous, detach, alias, dropout (eval), nn.Identity, .to(same dtype): the program is
    the one of the same model without them."""
    plain = _Fn(lambda x: (torch.relu(x).transpose(1, 2)) * 2)
    p1, worst, _ = _compare(_Identities(), [(1, 4, 6)], scheme)
    p2, _, _ = _compare(plain, [(1, 4, 6)], scheme)
    ops = [o.op for o in p1.graph.ops]
    assert ops == [o.op for o in p2.graph.ops] == ["CLAMP", "TRANSPOSE", "TABLE" if scheme == "int8" else "RESCALE"]
    assert worst[0] <= 1.001


# -- the model zoo: every case above in one multi-output model, on the host build ----------------
@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    d = tmp_path_factory.mktemp("elementwise")
    export_elementwise(d)
    return d


@pytest.mark.parametrize("scheme", SCHEMES)
def test_zoo_program_is_as_faithful_as_pt2e(scheme):
    """Per output, the lowered program's SQNR vs float equals that of PT2E's own quantized graph."""
    torch.manual_seed(0)
    m = ElementwiseZoo().eval()
    x = torch.randn(36, 3, 6, 6)
    gm = tabula.quantize(m, (x[:1],), x[:24], scheme=scheme)
    program = tabula.lower(gm)
    got = program.run(x[24:])
    with torch.no_grad():
        f = [torch.cat(t).numpy() for t in zip(*[m(x[i : i + 1]) for i in range(24, 36)])]
        g = [torch.cat(t).numpy() for t in zip(*[gm(x[i : i + 1]) for i in range(24, 36)])]
    assert len(got) == 6
    for k in range(6):
        assert abs(sqnr_db(f[k], got[k]) - sqnr_db(f[k], g[k])) < 0.3, k
        assert sqnr_db(f[k], got[k]) > 20, k


@pytest.mark.host
@pytest.mark.parametrize("scheme", SCHEMES)
def test_zoo_bit_exact_on_host_with_a_report_per_output(zoo, tmp_path, scheme):
    p = scons("board=host", f"scheme={scheme}", f"build_dir={tmp_path}", f"model={zoo / 'elementwise.pt2'}",
              f"calib={zoo / 'calib.npz'}", f"data={zoo / 'test.npz'}")
    name = "elementwise" if scheme == "int8" else f"elementwise-{scheme}"
    r = json.loads((tmp_path / "host" / name / "results.json").read_text())
    assert r["n_outputs_received"] == 12 and r["bit_exact_mismatches"] == 0
    outs = r["outputs"]
    assert [o["shape"] for o in outs] == [[3, 6, 6], [4, 6, 6], [4, 6, 6], [36, 4], [36, 6], [5]]
    assert all(o["bit_exact_mismatches"] == 0 for o in outs)
    assert sum(o["output_elements"] for o in outs) == r["output_elements"]
    assert all(o["sqnr_db_vs_float"] > 20 for o in outs), outs
    assert outs[0]["sqnr_db_vs_float"] > (35 if scheme == "int8" else 80)  # the input itself
    assert r["sqnr_db_vs_float"] == min(o["sqnr_db_vs_float"] for o in outs)
    assert p.stdout.count("  output ") == 6  # one line per output in the printed table
    ops = {o["op"] for o in json.loads((tmp_path / "host" / name / "ir.json").read_text())["ops"]}
    assert {"ADD", "SUB", "MUL", "CONCAT", "RESCALE"} <= ops
    # permute(0, 2, 3, 1) then flatten reads the NHWC tensor in its own order: the layout pass leaves a RESHAPE
    assert "TRANSPOSE" not in ops


@pytest.mark.qemu
def test_zoo_bit_exact_on_corstone300(zoo, tmp_path):
    """The broadcasting kernels and every elementwise case on the emulated Cortex-M55."""
    scons("board=corstone300", f"build_dir={tmp_path}", f"model={zoo / 'elementwise.pt2'}", f"calib={zoo / 'calib.npz'}",
          f"data={zoo / 'test.npz'}", "limit=4")
    r = json.loads((tmp_path / "corstone300" / "elementwise" / "results.json").read_text())
    assert r["n_outputs_received"] == 4 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert len(r["outputs"]) == 6 and r["instructions_per_inference"] > 0


def test_int32_constants_round_half_to_even_exactly_and_refuse_what_does_not_fit():
    from tabula.qmath import QuantizationError, quantize_int32_round_half_even

    q = quantize_int32_round_half_even(np.array([0.5, 1.5, -0.5, -2.5, 2.0**30 - 0.5, 1e-9]), 1.0)
    assert q.dtype == np.int32 and q.tolist() == [0, 2, 0, -2, 2**30, 0]
    assert quantize_int32_round_half_even(np.array([1.0 / 3.0]), 1.0 / 3.0 / 2**30, 30).tolist() == [2**30]
    for bad, scale in ((np.array([2.0**31]), 1.0), (np.array([np.nan]), 1.0), (np.array([1.0]), 0.0)):
        with pytest.raises(QuantizationError):
            quantize_int32_round_half_even(bad, scale, 30)
