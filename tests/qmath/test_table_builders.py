"""Table building in qmath: domains, poles, saturation, monotonicity, the int16 slope limit,
table-exact output qparams, the error bound, and the IR-level report and plots."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tabula import dtypes, qmath, rules
from tabula.qmath import QuantizationError
from tabula.report.table_cases import CASES, SINGULAR_CASES, build, build_plan, sweep_sqnr, table_op_graph
from tabula.report.tables import op_function, plot_tables, table_report

CASE = {c.id: c for c in CASES}
#: cases where f is monotone over the whole input range: +1 non-decreasing, -1 non-increasing
MONOTONE = {"sigmoid": 1, "tanh": 1, "elu(1.0)": 1, "leaky_relu(0.01)": 1, "hardsigmoid": 1, "softplus": 1,
            "exp": 1, "expm1": 1, "log": 1, "log1p": 1, "sqrt": 1, "rsqrt": -1, "reciprocal": -1, "erf": 1,
            "tan": 1, "atan": 1, "asin": 1, "acos": -1, "atanh": 1, "sinh": 1, "asinh": 1, "acosh": 1,
            "pow(3)": 1, "pow(0.5)": 1}


def _device(case, form):
    """(device output on every code, the knots, (s_in, zp_in), (s_out, zp_out)) for ``form``: "int8",
    "int16" (the plan the lowering picks) or "int16-split" (a split table: knots hi * 2^7 + lo).
    Knots: the int8 table, or the one-term plan's knots; None for a plan of several terms."""
    if form == "int8":
        table, qin, qout = build(case, form)
        return table.astype(np.int64), table, qin, qout
    plan, qin, qout = build_plan(case, None if form == "int16" else "split")
    dev = qmath.table16_apply(plan, np.arange(-32768, 32768)).astype(np.int64)
    return dev, plan.terms[0].knots() if len(plan.terms) == 1 else None, qin, qout


# ---- monotonicity, poles, domain edges --------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "int16", "int16-split"])
@pytest.mark.parametrize("name", sorted(MONOTONE))
def test_monotone_functions_give_monotone_tables(name, dtype):
    out, table, _, _ = _device(CASE[name], dtype)
    sign = MONOTONE[name]
    if table is not None:
        assert np.all(sign * np.diff(table.astype(np.int64)) >= 0), "a table entry breaks monotonicity"
    assert np.all(sign * np.diff(out) >= 0), "the device output breaks monotonicity"


@pytest.mark.parametrize("dtype", ["int8", "int16", "int16-split"])
@pytest.mark.parametrize("name,pole_value", [("reciprocal", "max"), ("rsqrt", "max"), ("log", "min")])
def test_poles_at_zero_saturate_monotonically(name, pole_value, dtype):
    case = CASE[name]
    out, _, (s_in, zp_in), _ = _device(case, dtype)
    codes = np.arange(-128, 128) if dtype == "int8" else np.arange(-32768, 32768)
    lo, hi = dtypes.range_of(dtype[:5])
    at_or_below_zero = codes <= zp_in  # x <= 0: clipped to the domain edge 0, where f is +-inf
    want = hi if pole_value == "max" else lo
    assert np.all(out[at_or_below_zero] == want)
    if dtype == "int8":  # the first code above 0 saturates too (1/s_in is the top of the range)
        assert out[codes == zp_in + 1][0] in (want, want - 1 if want == hi else want + 1)
    d = np.diff(out)
    assert np.all(d <= 0) if pole_value == "max" else np.all(d >= 0)


def test_int8_inf_results_saturate_like_pytorch():
    # +-inf from f itself (not from a domain clip): 1/x at x = 0 and log(0)
    t = qmath.build_table_int8(lambda v: 1.0 / v, 0.1, 0, 0.05, 0)
    assert t[128] == 127 and t[127] == -128  # 1/(+0) = +inf; 1/(-0.1) = -10 -> -200 -> -128
    t = qmath.build_table_int8(np.log, 0.1, -128, 0.05, 0)
    assert t[0] == -128


@pytest.mark.parametrize("dtype", ["int8", "int16", "int16-split"])
def test_acos_of_minus_one_is_the_largest_value(dtype):
    out, _, _, (s_out, zp_out) = _device(CASE["acos"], dtype)
    hi = dtypes.range_of(dtype[:5])[1]
    assert out[0] == out.max() and out[0] >= hi - 1  # code -128 (x = -1.0079 -> -1) and -32768: pi
    assert abs((out[0] - zp_out) * s_out - math.pi) <= s_out
    if dtype == "int8":
        assert out[-1] == zp_out  # acos(1) = 0 (int16: the last segment's chord misses the sqrt-like end)


def test_domain_clip_gives_f_at_the_edge_instead_of_nan():
    f = op_function("aten.asin")
    with pytest.raises(QuantizationError, match="NaN"):
        qmath.build_table_int8(f, 1 / 127, 0, math.pi / 2 / 127, 0)
    t = qmath.build_table_int8(f, 1 / 127, 0, math.pi / 2 / 127, 0, domain=(-1.0, 1.0))
    assert t[0] == t[1] == -127 and t[-1] == 127  # -1.0079 -> asin(-1); 1 -> asin(1)
    with pytest.raises(QuantizationError, match="NaN"):
        qmath.build_table_int16(f, 1.1 / 32767, 1.6 / 32767)
    t16 = qmath.build_table_int16(f, 1.1 / 32767, 1.6 / 32767, domain=(-1.0, 1.0))
    assert t16[0] == t16[1] and t16[-1] == t16[-2]  # both ends beyond +-1: f at the edge


# ---- int16 slope limit ------------------------------------------------------------------------------
def test_int16_too_steep_is_a_clear_error():
    tan = op_function("aten.tan")
    with pytest.raises(QuantizationError, match=r"too steep.*input codes .*Remedy"):
        qmath.build_table_int16(tan, 2.0 / 32767, 20.0 / 32767)  # crosses the pole at pi/2
    with pytest.raises(QuantizationError, match="too steep"):
        qmath.build_table_int16(lambda v: 1.0 / v, 4.0 / 32767, 1.0, method="sample")  # -inf | +inf at 0
    t = qmath.build_table_int16(lambda v: np.where(v < 0, -30000.0, 2767.0), 1 / 32767, 1.0)  # a jump that fits
    assert np.abs(np.diff(t.astype(int))).max() == 32767


def test_int16_sample_method_is_plain_rounding():
    f = op_function("aten.sigmoid")
    t = qmath.build_table_int16(f, 8 / 32767, 1 / 32767, method="sample")
    x = qmath.INT16_TABLE_CODES * (8 / 32767)
    np.testing.assert_array_equal(t, np.clip(np.rint(f(x) * 32767), -32768, 32767))
    with pytest.raises(ValueError, match="method"):
        qmath.build_table_int16(f, 1.0, 1.0, method="linspace")


# ---- output qparams and error bound -----------------------------------------------------------------
def test_int8_table_exact_qparams_equal_pytorch_minmax_observer_on_the_image():
    from torchao.quantization.pt2e import MinMaxObserver

    for c in (CASE["tanh"], CASE["silu"], CASE["sigmoid"], CASE["exp"]):
        f = c.f()
        s_in, zp_in = c.in_qparams("int8")
        s, zp = qmath.table_output_qparams(f, s_in, zp_in, "int8")
        obs = MinMaxObserver(dtype=torch.int8, quant_min=-128, quant_max=127, eps=2.0**-24)
        obs(torch.from_numpy(f(qmath.dequantize(np.arange(-128, 128), s_in, zp_in))))
        s_t, zp_t = obs.calculate_qparams()
        assert (s, zp) == (float(s_t), int(zp_t))


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_table_exact_qparams_use_the_whole_range_without_saturating(dtype):
    for name in ("tanh", "sin", "silu", "exp", "atan"):
        table, qin, qout = build(CASE[name], dtype)
        e = qmath.table_error_lsb(CASE[name].f(), table, *qin, *qout, dtype)
        assert e["saturated"] == 0
        lo, hi = dtypes.range_of(dtype)
        if dtype == "int8":
            assert table.max() >= hi - 1 and (table.min() <= lo + 1 or qout[1] == lo)
            assert e["max_lsb"] <= 0.5 + 1e-3  # the int8 table is q(f(dq(c))): only rounding
        else:
            assert max(abs(int(table.min())), int(table.max())) >= 32766


def test_int16_minimax_beats_plain_sampling_and_meets_the_bound():
    for name, bound in (("sigmoid", 1.06), ("tanh", 1.22)):  # sigmoid in [-8, 8], tanh in [-4, 4]
        c = CASE[name]
        f, (s_in, _), (s_out, _) = c.f(), c.in_qparams("int16"), build(c, "int16")[2]
        plain = qmath.build_table_int16(f, s_in, s_out, method="sample")
        best = qmath.build_table_int16(f, s_in, s_out)
        ep = qmath.table_error_lsb(f, plain, s_in, 0, s_out, 0, "int16")
        eb = qmath.table_error_lsb(f, best, s_in, 0, s_out, 0, "int16")
        assert eb["max_lsb"] < ep["max_lsb"] and eb["mean_lsb"] < ep["mean_lsb"]
        assert eb["max_lsb"] <= bound
    f = op_function("aten.sigmoid")  # a narrower input range [-3, 3]: within 1 LSB everywhere
    s_out, _ = qmath.table_output_qparams(f, 3 / 32767, 0, "int16")
    t = qmath.build_table_int16(f, 3 / 32767, s_out)
    assert qmath.table_error_lsb(f, t, 3 / 32767, 0, s_out, 0, "int16")["max_lsb"] <= 1.0


def test_int16_sigmoid_and_tanh_within_one_lsb_everywhere():
    """The issue's bar: int16 sigmoid (input +-8) and tanh (+-4), max error <= 1.0 output LSB over all
    65,536 codes against the exact function.  No single table reaches it (1.055 / 1.216, the global
    optimum of the integer search); the lowering picks a split table (knots in 1/128 LSB)."""
    for name, bound in (("sigmoid", 0.70), ("tanh", 0.87)):
        c = CASE[name]
        plan, (s_in, _), (s_out, _) = build_plan(c)
        assert plan.form == "split" and plan.n_ops == 5 and plan.n_tables == 2
        e = qmath.table_error_lsb(c.f(), plan, s_in, 0, s_out, 0, "int16")
        single = qmath.build_table_int16(c.f(), s_in, s_out)
        e1 = qmath.table_error_lsb(c.f(), single, s_in, 0, s_out, 0, "int16")
        assert e["max_lsb"] <= bound <= 1.0 < e1["max_lsb"]
        assert e["mean_lsb"] < e1["mean_lsb"] and e["saturated"] == 0
    # within +-3 a single table already meets 1 LSB: the lowering keeps the cheaper form
    f = op_function("aten.sigmoid")
    s_out, _ = qmath.table_output_qparams(f, 3 / 32767, 0, "int16")
    plan = qmath.build_table_int16_plan(f, 3 / 32767, s_out)
    assert plan.form == "single" and plan.n_ops == 2
    assert qmath.table_error_lsb(f, plan, 3 / 32767, 0, s_out, 0, "int16")["max_lsb"] <= 1.0


@pytest.mark.parametrize("name,rng,bound", [
    ("tanh", 14, 0.75),  # the digits example's a16w8 tanh: 5.3 LSB with one table
    ("tanh", 8, 0.80),
    ("sigmoid", 20, 1.0),
    ("atan", 8, 0.70),
])
def test_wide_input_ranges_get_a_zoomed_table_within_one_lsb(name, rng, bound):
    """Over a wide calibrated range one table's segments are too coarse where f bends (tanh +-14:
    5.6 LSB); a centre table indexed by x * 2^k plus a table for the rest stays within 1 LSB,
    monotone, with no REQUIRE or int32 trouble on any code (table16_apply checks them)."""
    f = op_function(f"aten.{name}")
    s_in = rng / 32767
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16")
    plan = qmath.build_table_int16_plan(f, s_in, s_out)
    e = qmath.table_error_lsb(f, plan, s_in, 0, s_out, 0, "int16")
    e1 = qmath.table_error_lsb(f, qmath.build_table_int16(f, s_in, s_out), s_in, 0, s_out, 0, "int16")
    assert plan.form.startswith("zoom") and e["max_lsb"] <= bound < e1["max_lsb"] and e["saturated"] == 0
    dev = qmath.table16_apply(plan, np.arange(-32768, 32768)).astype(np.int64)
    assert np.all(np.diff(dev) >= 0)  # all four are monotone non-decreasing


#: The lowered int16 form of every case (table_cases.CASES): its max error over all 65,536 codes
#: against the exact function, pinned (measured + ~0.01).  The issue's bar is 1.0 LSB for every op.
INT16_MAX_LSB = {
    "silu": 0.63, "sigmoid": 0.69, "tanh": 0.87, "gelu": 0.66, "gelu(approximate=tanh)": 0.66, "elu(1.0)": 0.65,
    "leaky_relu(0.01)": 0.5 + 2**-10, "hardswish": 0.5 + 2**-10, "hardsigmoid": 0.5 + 2**-10, "softplus": 0.996,
    "exp": 0.71, "expm1": 0.92, "log": 0.71, "log1p": 0.70, "sqrt": 0.76, "rsqrt": 0.77, "reciprocal": 0.66,
    "erf": 0.77, "sin": 0.97, "cos": 0.70, "tan": 0.76, "atan": 0.70, "asin": 0.69, "acos": 0.79, "atanh": 0.69,
    "sinh": 0.94, "cosh": 0.93, "asinh": 0.75, "acosh": 0.72, "pow(2)": 0.96, "pow(3)": 0.67, "pow(0.5)": 0.76,
    "abs": 0.51, "mish": 0.65, "log2": 0.71, "log10": 0.71, "selu": 0.77, "celu(0.5)": 0.83, "erfinv": 0.75, "logit": 0.77,
    "softsign": 0.79, "sign": 0.01, "round": 0.51, "ceil": 0.45, "floor": 0.45,  # the steps: exact sums, one rounding by 1 / s_out
}


def test_every_int16_table_op_within_one_lsb_on_its_typical_range():
    """The issue's bar: every int16 table op, in the form the lowering picks, within 1.0 output LSB of
    the exact function on every input code (saturation at poles aside), each worst case pinned."""
    assert set(INT16_MAX_LSB) == {c.id for c in CASES}
    for c in CASES:
        plan, (s_in, _), (s_out, _) = build_plan(c)
        e = qmath.table_error_lsb(c.f(), plan, s_in, 0, s_out, 0, "int16", domain=c.dom)
        assert e["max_lsb"] <= INT16_MAX_LSB[c.id] <= 1.0, (c.id, plan.form, e)


@pytest.mark.parametrize("name,single_at_least", [
    ("reciprocal", 20000), ("rsqrt", 20000), ("log", 8000), ("sqrt", 470), ("pow(0.5)", 470),
    ("asin", 400), ("acos", 200), ("atanh", 6000), ("acosh", 400), ("log1p", 8000), ("tan", 4),
])
def test_a_singular_point_gets_a_tiled_plan_within_one_lsb(name, single_at_least):
    """A pole or infinite slope at 0 (reciprocal, rsqrt, log, sqrt), a singular end of the domain (asin,
    acos, atanh at +-1; acosh at 1, log1p at -1) or poles just past the range (tan): one table errs by
    hundreds to tens of thousands of LSB there; a split backbone plus zoomed corrections centred where f
    is singular is within 1 LSB on every code, monotone, the poles still saturating
    (test_poles_at_zero_saturate_monotonically)."""
    c = CASE[name]
    plan, (s_in, _), (s_out, _) = build_plan(c)
    e = qmath.table_error_lsb(c.f(), plan, s_in, 0, s_out, 0, "int16", domain=c.dom)
    single = qmath.build_table_int16(c.f(), s_in, s_out, domain=c.dom)
    e1 = qmath.table_error_lsb(c.f(), single, s_in, 0, s_out, 0, "int16", domain=c.dom)
    assert any(t.zoom for t in plan.terms) and plan.split and e["max_lsb"] <= 1.0 and e1["max_lsb"] >= single_at_least
    assert e["mean_lsb"] < e1["mean_lsb"]


@pytest.mark.parametrize("case", SINGULAR_CASES, ids=[c.id for c in SINGULAR_CASES])
def test_singular_ends_within_3_db_of_the_ideal_sqnr(case):
    """The singular-end sweep (inputs reaching 2^-10 of the singular end, on the a16w8 grids): output
    SQNR against float within 3 dB of the ideal (exact f of the quantized input, rounded to the output
    grid) -- in fact within 0.5 dB -- on every code of the range and on the issue's 101 points; one table
    is 28 to 60 dB below it."""
    plan = build_plan(case)[0]
    f, dom = case.f(), case.dom
    s_in = case.in_qparams("int16")[0]
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16", domain=dom)
    single = qmath.Table16Plan((qmath.Table16Term(0, qmath.build_table_int16(f, s_in, s_out, domain=dom)),))
    for points in (None, 101):
        got, one = sweep_sqnr(case, plan, points), sweep_sqnr(case, single, points)
        assert got["device"] >= got["ideal"] - 0.5 and got["max_lsb"] <= 1.0, (points, got)
        assert one["device"] < got["ideal"] - 10.0, (points, one)


@pytest.mark.parametrize("name,r", [
    ("sigmoid", 30), ("tan", 1.55), ("log", 1000), ("reciprocal", 100), ("sin", 10), ("exp", 10), ("atan", 100),
])
def test_wide_and_pole_ranges_stay_within_one_lsb(name, r):
    """Calibrated ranges far from the typical ones (a pole one code away, several periods, a 2e4 ratio
    of slopes): the lowering's plan still meets 1 LSB, monotone where f is."""
    fn = f"aten.{name}"
    f = op_function(fn)
    dom = rules.DOMAIN.get(fn)
    dom = None if dom is None else (dom.lo, dom.hi)
    s_in = r / 32767
    s_out, _ = qmath.table_output_qparams(f, s_in, 0, "int16", domain=dom)
    plan = qmath.build_table_int16_plan(f, s_in, s_out, domain=dom)
    e = qmath.table_error_lsb(f, plan, s_in, 0, s_out, 0, "int16", domain=dom)
    assert e["max_lsb"] <= 1.0, (name, plan.form, e)


@pytest.mark.parametrize("centre", [-65536, -32768, -3840, 0, 128, 4096, 32768, 65536])
def test_centre_index_is_exact_on_every_code(centre):
    """A centred term's index -- its shift TABLE (128 (x - centre), exact below the top clip) RESCALEd by
    2^(k-7) -- is saturate16((x - centre) * 2^k) on every int16 code for every zoom 1..7: what the fused
    kernel computes directly."""
    codes = np.arange(-32768, 32768, dtype=np.int64)
    v = qmath.table_interpolate_int16(qmath.centre_table(centre), codes).astype(np.int64)
    inside = (codes - centre >= -32768) & (codes - centre < 32640)
    np.testing.assert_array_equal(v[inside], 128 * (codes - centre)[inside])
    for k in range(1, 8):
        m, s = qmath.centre_rescale(k)
        assert qmath.quantize_multiplier(2.0 ** (k - 7)) == (m, s)
        idx = np.clip(qmath.apply_scale_32_round_half_up(v, m, s), -32768, 32767)
        np.testing.assert_array_equal(idx, np.clip((codes - centre) * 2**k, -32768, 32767))
    with pytest.raises(ValueError, match="multiple of 128"):
        qmath.centre_table(centre + 1)


def test_tiled_corrections_are_zero_outside_their_tiles():
    """Each correction of a tiled plan is exactly 0 away from its tile (its knots there are fixed), so
    the backbone alone is the output wherever no tile is: asin's middle is its backbone, bit for bit."""
    from tabula.qmath.table16 import _interp64, _zoom_index

    plan = build_plan(CASE["asin"])[0]
    codes = np.arange(-32768, 32768, dtype=np.int64)
    backbone, *corrections = plan.terms
    assert backbone.zoom == 0 and backbone.centre == 0 and corrections
    middle = np.abs(codes) < 16384
    for t in corrections:
        v = _interp64(t.knots(), _zoom_index(codes, t.zoom, t.centre))
        assert np.all(v[middle] == 0) and np.count_nonzero(v) < 8192  # local: under 1/8 of the codes
    only = qmath.Table16Plan((backbone,))
    np.testing.assert_array_equal(qmath.table16_apply(only, codes)[middle], qmath.table16_apply(plan, codes)[middle])


def test_zoom_index_is_exact_and_saturates():
    codes = np.array([-32768, -16385, -16384, -1, 0, 1, 16383, 16384, 32767])
    for k in (1, 2, 3):
        m, sh = qmath.zoom_rescale(k)
        got = np.clip(qmath.apply_scale_32_round_half_up(codes, m, sh), -32768, 32767)
        np.testing.assert_array_equal(got, np.clip(codes * 2**k, -32768, 32767))
        assert qmath.quantize_multiplier(2.0**k) == (m, sh)


def test_split_table_device_is_the_rounded_interpolation_of_its_knots():
    """hi * 2^7 + lo == the knots, and the five-op device pipeline == round-half-up(interp(knots) / 2^14)
    computed independently with Python integers, on random knots over the whole int16 range."""
    rng = np.random.default_rng(7)
    u = 2**qmath.TABLE16_FRAC_BITS
    knots = np.cumsum(rng.integers(-2000 * u, 2000 * u, 513)).astype(np.int64)
    knots = np.clip(knots - knots.mean().astype(np.int64), -32768 * u, 32767 * u)
    knots[:3] = [-32768 * u, 32767 * u - 5, -5]  # the int16 ends
    hi, lo = qmath.split_table_int16(knots)
    assert hi.min() >= -32768 and hi.max() <= 32767 and lo.min() >= -u // 2 and lo.max() < u // 2
    np.testing.assert_array_equal(hi * u + lo, knots)
    codes = np.concatenate([np.arange(-32768, -32768 + 600), rng.integers(-32768, 32768, 3000), np.arange(32000, 32768)])
    plan = qmath.Table16Plan((qmath.Table16Term(0, hi.astype(np.int16), lo.astype(np.int16)),))
    got = qmath.table16_apply(plan, codes)
    for c, g in zip(codes.tolist(), got.tolist()):
        i, fr = (c + 32768) >> 7, (c + 32768) & 127
        v = int(knots[i]) * 128 + (int(knots[i + 1]) - int(knots[i])) * fr  # in 2^-14 LSB
        assert g == max(-32768, min(32767, (v + 2**13) // 2**14)), c


def test_zoomed_plan_device_is_the_rounded_sum_of_its_terms():
    """A zoomed pair (no split): y = round-half-up((interp(C, sat(2^k c)) + interp(O, c)) / 2^7), checked
    with Python integers against table16_apply on random tables."""
    rng = np.random.default_rng(11)
    k = 2
    c_t = np.sort(rng.integers(-16000, 16000, 513)).astype(np.int16)
    o_t = rng.integers(-300, 300, 513).astype(np.int16)
    plan = qmath.Table16Plan((qmath.Table16Term(k, c_t), qmath.Table16Term(0, o_t)))
    assert plan.form == "zoom2" and plan.n_ops == 5 and plan.n_tables == 2
    codes = np.concatenate([rng.integers(-32768, 32768, 3000), [-32768, -8193, -8192, 8191, 8192, 32767]])
    got = qmath.table16_apply(plan, codes)

    def interp(t, c):
        i, fr = (c + 32768) >> 7, (c + 32768) & 127
        return int(t[i]) * 128 + (int(t[i + 1]) - int(t[i])) * fr

    for c, g in zip(codes.tolist(), got.tolist()):
        v = interp(c_t, max(-32768, min(32767, c * 2**k))) + interp(o_t, c)
        assert g == max(-32768, min(32767, (v + 64) // 128)), c


def test_int16_minimax_never_worse_than_sampling_for_any_op():
    for c in CASES:
        f, (s_in, _) = c.f(), c.in_qparams("int16")
        best, _, (s_out, _) = build(c, "int16")
        plain = qmath.build_table_int16(f, s_in, s_out, domain=c.dom, method="sample")
        eb = qmath.table_error_lsb(f, best, s_in, 0, s_out, 0, "int16", domain=c.dom)
        ep = qmath.table_error_lsb(f, plain, s_in, 0, s_out, 0, "int16", domain=c.dom)
        assert eb["max_lsb"] <= ep["max_lsb"] + 1e-9, c.id


def test_error_lsb_counts_device_rounding():
    t = np.zeros(513, np.int16)
    e = qmath.table_error_lsb(lambda v: v * 0 + 0.25, t, 1 / 32767, 0, 1.0, 0, "int16")
    assert e == {"max_lsb": 0.25, "mean_lsb": 0.25, "saturated": 0}


# ---- report -----------------------------------------------------------------------------------------
def test_table_report_and_plots(tmp_path):
    g8, g16 = table_op_graph(CASE["sigmoid"], "int8"), table_op_graph(CASE["tanh"], "int16", form="single")
    g16s = table_op_graph(CASE["tanh"], "int16", form="zoom1+split")
    (r8,) = table_report(g8)
    (r16,) = table_report(g16)
    (r16s,) = table_report(g16s)  # its other three TABLEs belong to the op, not rows of their own
    assert r8["function"] == "aten.sigmoid" and r8["dtype"] == "int8" and r8["max_lsb"] <= 0.5
    assert r16["dtype"] == "int16" and r16["output"] == "y" and 0.9 < r16["max_lsb"] <= 1.22 and r16["tables"] == 1
    assert r16s["output"] == "y" and r16s["form"] == "zoom1+split" and r16s["tables"] == 4
    assert 0.5 < r16s["max_lsb"] <= 0.8
    paths = plot_tables(g16, tmp_path) + plot_tables(g8, tmp_path / "b") + plot_tables(g16s, tmp_path / "c")
    assert [p.suffix for p in paths] == [".png", ".png", ".png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in paths)


# ---- bad input to the builders (found by an adversarial run) ----------------------------------------
def test_outputs_beyond_float32_are_a_clear_error_not_an_infinite_scale():
    with pytest.raises(QuantizationError, match="beyond float32"):
        qmath.table_output_qparams(np.exp, 90 / 32767, 0, "int16")  # exp(90) = 1.2e39
    for bad in (math.inf, 0.0, -1.0, math.nan):
        with pytest.raises(QuantizationError, match="output scale"):
            qmath.build_table_int16_plan(np.tanh, 4 / 32767, bad)
        with pytest.raises(QuantizationError, match="output scale"):
            qmath.build_table_int8(np.tanh, 4 / 127, 0, bad, 0)


def test_f_undefined_only_at_the_virtual_end_code_is_accepted():
    """sqrt(1 - x) on the grid 1/32767: finite at every real code (x <= 1); code +32768 (x > 1) is only
    the last knot of the table, so it takes f at the last real code instead of failing."""
    f = lambda v: np.sqrt(1.0 - v)  # noqa: E731
    with np.errstate(invalid="ignore"):
        s_out, _ = qmath.table_output_qparams(f, 1 / 32767, 0, "int16")
        plan = qmath.build_table_int16_plan(f, 1 / 32767, s_out)
        e = qmath.table_error_lsb(f, plan, 1 / 32767, 0, s_out, 0, "int16")
    assert s_out == pytest.approx(math.sqrt(2) / 32767, rel=1e-5) and e["saturated"] == 0  # float32 scale
    dev = qmath.table16_apply(plan, np.arange(-32768, 32768)).astype(np.int64)
    assert dev[-1] <= e["max_lsb"] and np.all(np.diff(dev) <= 0)  # sqrt(1 - 1) = 0, within the bound; monotone


def test_an_empty_or_nan_domain_is_refused():
    for dom in ((1.0, -1.0), (math.nan, 1.0)):
        with pytest.raises(QuantizationError, match="domain"):
            qmath.build_table_int16_plan(np.tanh, 4 / 32767, 1 / 32767, domain=dom)
        with pytest.raises(QuantizationError, match="domain"):
            qmath.build_table_int8(np.tanh, 4 / 127, 0, 1 / 127, 0, domain=dom)


def test_emit_int16_refuses_int16_zero_points():
    from tabula.errors import LoweringError
    from tabula.ir import Graph, Tensor
    from tabula.lowering.ops.table import emit_int16
    from tabula.lowering.pipeline import LoweringContext

    g = Graph()
    x = g.add_tensor(Tensor("x", (4,), "int16", 4 / 32767, 100))
    y = g.add_tensor(Tensor("y", (4,), "int16", 1 / 32767, 0))
    with pytest.raises(LoweringError, match="zero point"):
        emit_int16(LoweringContext(None, g), "op", x, y, np.tanh, {"function": "aten.tanh", "domain": None}, "here")
    assert g.ops == []
