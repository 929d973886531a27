"""int16 activations that are not one table (issue 13): the piecewise-linear ones as exact integer ramps
(tabula.qmath.piecewise: CLAMP, RESCALE, ADD/SUB, MUL -- only the final rounding), and, through the
whole chain, the tiled tables of the singular ones.  The C == Python == TOSA check of both forms on every
code is tests/tosa/test_tosa_conformance.py; the worst case of every op, tests/qmath/test_table_builders.py."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tabula import qmath
from tabula.qmath.piecewise import EXACT_INT16, build_piecewise_int16, ramps_for
from tabula.report.tables import op_function

#: (op, args, input range): kinks on and off the table's 128-code knots, a range that misses the kinks,
#: a very wide one, a negative leaky slope
CASES = [
    ("aten.hardsigmoid", (), 6), ("aten.hardsigmoid", (), 5), ("aten.hardsigmoid", (), 2), ("aten.hardsigmoid", (), 600),
    ("aten.hardswish", (), 6), ("aten.hardswish", (), 5), ("aten.hardswish", (), 1.3), ("aten.hardswish", (), 100),
    ("aten.leaky_relu", (0.01,), 6), ("aten.leaky_relu", (0.2,), 3.3), ("aten.leaky_relu", (-0.5,), 2),
]


def _exact(name, args, s_in, s_out):
    codes = np.arange(-32768, 32768, dtype=np.int64)
    fn = getattr(torch.ops.aten, name.split(".")[1]).default
    return codes, fn(torch.from_numpy(codes * np.float64(s_in)), *args).numpy() / s_out


@pytest.mark.parametrize("name,args,r", CASES, ids=[f"{n[5:]}{a}-{r}" for n, a, r in CASES])
def test_piecewise_linear_int16_is_exact_up_to_the_final_rounding(name, args, r):
    """Every code: within half an output LSB of f (plus 2^-10 of fixed point), and equal to PyTorch's
    q(f(dq(x))) except where f lands within 2^-10 of a rounding tie (PyTorch rounds half to even, TOSA's
    RESCALE half up).  No TABLE: the kinks at +-3 / 0 fall wherever they fall."""
    f = op_function(name, args)
    s_in = r / 32767
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16")
    plan = build_piecewise_int16(name, args, {}, f, s_in, s_out)
    assert not plan.terms and plan.ramps and plan.n_tables == 0
    codes, y = _exact(name, args, s_in, s_out)
    dev = qmath.table16_apply(plan, codes).astype(np.int64)
    assert np.abs(dev - y).max() <= 0.5 + 2**-10
    differ = dev != np.clip(np.rint(y), -32768, 32767)
    assert np.all(np.abs(np.abs(y[differ] - np.floor(y[differ])) - 0.5) < 2**-10)


def test_the_issue_hardsigmoid_range_went_from_a_bad_table_to_exact():
    """hardsigmoid over +-5 (kinks at +-3 are 19,660.2 codes off centre, inside a table segment): one
    table misses the kinks by several LSB; the ramps do not."""
    f = op_function("aten.hardsigmoid")
    s_in = 5 / 32767
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16")
    single = qmath.table_error_lsb(f, qmath.build_table_int16(f, s_in, s_out), s_in, 0, s_out, 0, "int16")
    exact = qmath.table_error_lsb(f, build_piecewise_int16("aten.hardsigmoid", (), {}, f, s_in, s_out), s_in, 0,
                                  s_out, 0, "int16")
    assert single["max_lsb"] > 5 and exact["max_lsb"] <= 0.5 + 2**-10


def test_elu_linear_part_is_exact_and_its_exponential_within_one_lsb():
    f = op_function("aten.elu", (1.0,))
    s_in = 6 / 32767
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16")
    plan = build_piecewise_int16("aten.elu", (1.0,), {}, f, s_in, s_out)
    assert len(plan.ramps) == 1 and plan.split
    codes, y = _exact("aten.elu", (1.0,), s_in, s_out)
    dev = qmath.table16_apply(plan, codes).astype(np.int64)
    pos = codes >= 0
    assert np.abs(dev[pos] - y[pos]).max() <= 0.5 + 2**-10  # the ramp alone: the tables are 0 there
    assert np.abs(dev[~pos] - y[~pos]).max() <= 0.66


def test_ramps_reproduce_a_constant_exactly_and_refuse_what_int32_cannot_hold():
    (r,) = ramps_for(lambda c: c * 0 + 1234.5678, [], 14)  # a constant: CLAMP x to [K, K], RESCALE
    assert r.lo == r.hi and int(r.value(np.array([-32768]))[0]) == round(1234.5678 * 2**14)
    with pytest.raises(qmath.QuantizationError, match="does not fit"):
        ramps_for(lambda c: c * 300.0, [], 14)  # 300 LSB per code at 2^14: beyond int32


@pytest.mark.parametrize("fn,name", [(torch.nn.functional.hardswish, "aten.hardswish"),
                                     (torch.nn.functional.hardsigmoid, "aten.hardsigmoid"),
                                     (lambda x: torch.nn.functional.leaky_relu(x, 0.1), "aten.leaky_relu")])
def test_a16w8_lowering_uses_the_ramps_and_int8_keeps_its_table(fn, name):
    import tabula

    class Unary(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    x = torch.linspace(-5, 5, 257).reshape(1, 257)
    ops = {}
    for scheme in ("int8", "a16w8"):
        program = tabula.lower(tabula.quantize(Unary(), (x,), x, scheme=scheme), (x,))
        ops[scheme] = [o.op for o in program.graph.ops]
        (s_in, _, _), (s_out, _, _) = program.input_qparams[0], program.output_qparams[0]
        if scheme == "a16w8":
            codes = np.arange(-32767, 32768, dtype=np.int16).reshape(-1, 1, 257)  # every code, 255 runs
            y = np.stack([program.run_int(c)[0] for c in codes])
            exact = fn(torch.from_numpy(codes.astype(np.float64) * s_in)).numpy() / s_out
            assert np.abs(y.astype(np.float64) - exact).max() <= 0.5 + 2**-10
    assert ops["int8"] == ["TABLE"]
    assert "TABLE" not in ops["a16w8"] and {"CLAMP", "RESCALE"} <= set(ops["a16w8"])
    assert name in EXACT_INT16


#: output SQNR of the activations model against float (measured: int8 12.8 dB, a16w8 29.2 dB -- set by
#: the model's ill-conditioned compositions, e.g. atanh(tanh(x)) = x, whose half-LSB tanh error near
#: |x| = 6 grows to ~1 after atanh; the ops themselves are pinned by their table bounds below)
SQNR_AT_LEAST = {"int8": 11.0, "a16w8": 27.0}


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_activations_bit_exact_on_host_with_their_bounds(tmp_path, scheme):
    """A model of every non-table int16 form through SCons on the host build: generated C (the fused
    tabula_table16_s16 with centred terms, ramps and the product step) == Python reference on every
    output, and every table op's bound in results.json within 1 LSB."""
    from fixtures.activations_model import export_activations
    from helpers import scons

    export_activations(tmp_path)
    scons("board=host", f"scheme={scheme}", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'activations.pt2'}",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}")
    name = "activations" + ("" if scheme == "int8" else f"-{scheme}")
    r = json.loads((tmp_path / "b" / "host" / name / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0
    assert r["sqnr_db_vs_float"] > (SQNR_AT_LEAST[scheme])
    rows = {t["function"]: t for t in r["tables"]}
    assert len(rows) == 14 and all(t["max_lsb"] <= (0.5 + 1e-3 if scheme == "int8" else 1.0) for t in rows.values())
    if scheme == "a16w8":
        assert rows["aten.hardswish"]["form"].endswith("+mul") and rows["aten.leaky_relu"]["form"] == "ramps2"
        assert "@" in rows["aten.asin"]["form"] and rows["aten.asin"]["tables"] >= 6 and "@" in rows["aten.log1p"]["form"]
