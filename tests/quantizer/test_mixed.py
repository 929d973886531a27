"""scheme=mixed: layers from the rules' op classes, qspecs per layer, the boundaries as the producers' own
RESCALEs, PT2E's simulation of any mix, the greedy choice (target, budget, overrides), and every boundary
kind bit-exact in C on the emulated Cortex-M55."""
from __future__ import annotations

import json
import math

import pytest
import torch

import tabula
from fixtures.mixed_model import BOUNDARIES, export, inputs, mixed_boundaries
from helpers import scons
from tabula.quantizer import float_graph, quantize_graph
from tabula.quantizer.annotator import TabulaQuantizer
from tabula.quantizer.choice import Choice
from tabula.quantizer.mixed import choose
from tabula.quantizer.precision import Layer, layers, resolve_overrides
from tabula.quantizer.sensitivity import Simulator, before_softmax


@pytest.fixture(scope="module")
def model():
    return mixed_boundaries(), inputs(32)


def test_layers_are_the_owners_of_grids_with_what_keeps_their_dtype(model):
    m, x = model
    got = {lay.name: (lay.op, lay.nodes, lay.consumers) for lay in layers(float_graph(m, (x[:1],), None))}
    assert got == {
        "x": ("input", ["x"], ["conv2d"]),
        "conv2d": ("aten.conv2d", ["conv2d", "relu"], ["add", "conv2d_1"]),            # fused relu
        "conv2d_1": ("aten.conv2d", ["conv2d_1", "relu6"], ["cat", "conv2d_2"]),
        "conv2d_2": ("aten.conv2d", ["conv2d_2", "sigmoid"], ["add"]),                 # a TABLE keeps its input's
        "add": ("aten.add", ["add"], ["cat"]),
        "cat": ("aten.cat", ["cat", "avg_pool2d", "flatten"], ["linear"]),            # SHARED ops keep it too
        "linear": ("aten.linear", ["linear", "softmax"], []),                          # and the softmax
    }


def test_overrides_name_modules_and_layers_the_most_specific_winning():
    lays = [Layer("conv2d", "aten.conv2d", "features.0"), Layer("conv2d_1", "aten.conv2d", "features.1"),
            Layer("linear", "aten.linear", "classifier")]
    assert resolve_overrides(lays, {"features": "a16w8", "conv2d_1": "int8", "classifier": "a16w8"}) == \
        {"conv2d": "a16w8", "conv2d_1": "int8", "linear": "a16w8"}
    assert resolve_overrides(lays, {"features.1": "int8", "features": "a16w8"})["conv2d_1"] == "int8"
    with pytest.raises(ValueError, match="names no layer.*features.0 conv2d, features.1 conv2d_1, classifier linear"):
        resolve_overrides(lays, {"head": "a16w8"})
    with pytest.raises(ValueError, match="choose int8 or a16w8"):
        resolve_overrides(lays, {"classifier": "int16"})
    # features.10 is not under features.1
    assert resolve_overrides([Layer("c", "aten.conv2d", "features.10")], {"features.10": "a16w8"}) == {"c": "a16w8"}
    with pytest.raises(ValueError, match="names no layer"):
        resolve_overrides([Layer("c", "aten.conv2d", "features.10")], {"features.1": "a16w8"})


def test_each_layer_takes_its_dtype_and_a_boundary_is_the_producers_own_rescale(model):
    m, x = model
    g = tabula.lower(tabula.quantize(m, (x[:1],), x, precision=BOUNDARIES)).graph
    dt = {name: t.dtype for name, t in g.tensors.items()}
    assert dt["x"] == "int8" and dt["relu"] == "int16" and dt["relu6"] == "int8" and dt["sigmoid"] == "int16"
    assert dt["add"] == "int8" and dt["cat"] == dt["avg_pool2d"] == "int16" and dt["linear"] == "int8"
    acc = {o.op: [] for o in g.ops}
    for o in g.ops:
        acc[o.op].append((dt[o.inputs[0]], dt[o.outputs[0]]))
    assert acc["CONV2D"] == [("int8", "int32"), ("int8", "int32")]   # c1, c3 read int8 ...
    assert acc["DEPTHWISE_CONV2D"] == [("int16", "int48")]          # c2 reads c1's int16
    assert acc["FULLY_CONNECTED"] == [("int16", "int48")]
    # ... and the accumulators' RESCALEs write the other dtype: int32 -> int16, int48 -> int8
    rescales = {(o.inputs[0], dt[o.inputs[0]], dt[o.outputs[0]]) for o in g.ops if o.op == "RESCALE"}
    assert {("conv2d_acc", "int32", "int16"), ("conv2d_1_acc", "int48", "int8"), ("conv2d_2_acc", "int32", "int16"),
            ("linear_acc", "int48", "int8")} <= rescales
    # the only RESCALE from one activation grid to another is the cat's, per input of another grid (as in int8)
    act = {"int8", "int16"}
    moves = sorted((i, a, b) for i, a, b in rescales if a in act and b in act)
    assert moves == [("add", "int8", "int16"), ("relu6", "int8", "int16")]
    # within half a percent of the all-int8 / all-int16 programs' sizes: no op added at a boundary
    n8 = len(tabula.lower(tabula.quantize(m, (x[:1],), x)).graph.ops)
    assert abs(len(g.ops) - n8) <= 3


def test_an_unrolled_recurrence_is_one_layer_per_role_over_the_steps():
    """Every step of an LSTM's role (a gate, c, h) has one grid (rules.STEP_GRID_KEY), so one dtype: its
    layers over the steps are one; an override of one takes the role int16 at every step, and it lowers."""
    from fixtures.recurrent_models import make
    from tabula import rules

    torch.manual_seed(0)
    m, x = make("lstm", hidden=8), torch.randn(8, 3, 16)
    fg = float_graph(m, (x[:1],), None)
    lays = layers(fg)
    where = {n: lay.name for lay in lays for n in lay.nodes}
    roles: dict[str, set[str]] = {}
    for n in fg.graph.nodes:
        if n.meta.get(rules.STEP_GRID_KEY):
            roles.setdefault(n.meta[rules.STEP_GRID_KEY], set()).add(where[n.name])
    assert roles and all(len(v) == 1 for v in roles.values())
    assert len(lays) < 2 + sum(1 for n in fg.graph.nodes if n.meta.get(rules.STEP_GRID_KEY)) // 3   # not per step
    c = next(k for k in roles if k.endswith(".c"))
    (cell,) = roles[c]
    g = tabula.lower(tabula.quantize(m, (x[:1],), x, precision={cell: "a16w8"})).graph
    nodes = {n.name for n in fg.graph.nodes if n.meta.get(rules.STEP_GRID_KEY) == c}
    assert {g.tensors[n].dtype for n in nodes if n in g.tensors} == {"int16"}
    assert "int8" in {t.dtype for t in g.tensors.values()}


def test_a_comparison_and_an_index_op_take_their_operands_dtype():
    """gt(a, b) compares on one grid: a's (its producer's layer, as arithmetic inputs), b requantized onto
    it; argmax reads its producer's grid.  Under int8 with a = a16w8 the comparison is on int16 codes."""
    from torch import nn

    from tabula.fx import is_dequantize

    class Cmp(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(2, 4, 3, padding=1), nn.Conv2d(2, 4, 3, padding=1)

        def forward(self, x):
            a, b = self.a(x), self.b(x)
            return torch.argmax(a.flatten(1), dim=1), torch.where(a > b, a, b)

    torch.manual_seed(0)
    m, x = Cmp().eval(), torch.randn(8, 2, 6, 6)
    gm = tabula.quantize(m, (x[:1],), x, precision={"a": "a16w8"})
    ops = {str(n.target).split(".")[1]: n for n in gm.graph.nodes if n.op == "call_function"}
    for op in ("gt", "argmax"):
        dq = [a for a in ops[op].args if hasattr(a, "op") and is_dequantize(a)]
        assert dq and {a.args[-1] for a in dq} == {torch.int16}, (op, [a.args for a in dq])
    tabula.lower(gm)


def test_the_simulator_is_pt2es_own_simulation_of_each_scheme(model):
    m, x = model
    fg = float_graph(m, (x[:1],), None)
    import copy

    g8 = quantize_graph(copy.deepcopy(fg), TabulaQuantizer("int8"), (x[:1],), x)
    g16 = quantize_graph(copy.deepcopy(fg), TabulaQuantizer("a16w8"), (x[:1],), x)
    sim = Simulator(fg, g8, g16, [(x[i:i + 1],) for i in range(len(x))])
    names = [lay.name for lay in layers(fg)]
    # measured before the model's final softmax: its logits (the converted graphs cut there alike)
    logits = before_softmax(copy.deepcopy(fg))
    assert sum(n.op == "call_function" and "softmax" in str(n.target) for n in fg.graph.nodes) == 1
    assert not any("softmax" in str(n.target) for n in logits.graph.nodes)
    with torch.no_grad():
        yf = torch.cat([logits(x[i:i + 1]) for i in range(len(x))]).double()
        assert torch.allclose(sim.reference[0], yf.reshape(len(x), -1), rtol=1e-5, atol=1e-6)  # batched: other sums
        for gm, scheme in ((g8, "int8"), (g16, "a16w8")):
            gm = before_softmax(copy.deepcopy(gm))
            want = float(((torch.cat([gm(x[i:i + 1]) for i in range(len(x))]).double() - yf) ** 2).sum())
            assert sim.noise({n: scheme for n in names}) == pytest.approx(want, rel=1e-3)  # float sums in another order
    assert sim.noise({}, ()) == 0.0                                  # everything float
    assert sim.noise({"x": "int8"}, ()) > 100 * sim.noise({"x": "a16w8"}, ())
    assert sim.weighted == {"conv2d", "conv2d_1", "conv2d_2", "linear"}


class _AdditiveSim:
    """A stand-in simulator: each layer adds its noise (int8 / int16) and weights add a fixed noise."""

    def __init__(self, n8: dict, n16: dict, weights: float = 1.0, signal: float = 1e4):
        self.n8, self.n16, self.w, self.signal = n8, n16, weights, signal
        self.samples = [0] * 10
        self.weighted = set()

    def layers_of_grids(self):
        return set(self.n8)

    def noise(self, acts, weights=None):
        return sum((self.n8 if v == "int8" else self.n16)[k] for k, v in acts.items() if v) + \
            (self.w if weights is None else 0.0)

    def sqnr(self, noise):
        return math.inf if noise <= 0 else 10 * math.log10(self.signal / noise)


def _cost(per: dict):
    def cost(p):
        d = {k: (c16 if p.get(k) == "a16w8" else c8) for k, (c8, c16) in per.items()}
        return sum(d.values()), d
    return cost


LAYERS = [Layer(n, "aten.conv2d", "") for n in "abcd"]
N8 = {"a": 40.0, "b": 30.0, "c": 2.0, "d": 1.0}
N16 = {"a": 0.1, "b": 0.1, "c": 0.1, "d": 1.5}     # d: int16 no better (never chosen)
COST = {"a": (100, 1000), "b": (100, 150), "c": (100, 101), "d": (100, 100)}


def test_the_target_is_met_with_the_fewest_cheapest_int16_layers():
    sim = _AdditiveSim(N8, N16)
    # int8: noise 74 -> 21.3 dB.  30 dB needs noise <= 10: both a and b must go (b first: cheaper per noise)
    c = choose(sim, LAYERS, _cost(COST), {}, target_sqnr=30.0)
    assert c.precision == {"a": "a16w8", "b": "a16w8", "c": "int8", "d": "int8"} and c.met
    assert c.sqnr_mixed == pytest.approx(sim.sqnr(1 + 0.1 + 0.1 + 2 + 1), abs=0.01)
    assert c.instructions_mixed == 1000 + 150 + 100 + 100 and c.instructions_int8 == 400
    # 24.5 dB (noise <= 35.5) needs a alone: the greedy takes c, b (cheaper per noise), then a; the
    # pruning drops what the target does not need (b, then c)
    c = choose(sim, LAYERS, _cost(COST), {}, target_sqnr=24.5)
    assert c.precision == {"a": "a16w8", "b": "int8", "c": "int8", "d": "int8"}
    gains = {lay.name: lay.gain_db for lay in c.layers}
    assert gains["a"] == pytest.approx(sim.sqnr(1 + 0.1 + 30 + 2 + 1) - sim.sqnr(1 + 40 + 30 + 2 + 1), abs=0.01)


def test_a_budget_is_kept_and_overrides_stay_as_given():
    sim = _AdditiveSim(N8, N16)
    c = choose(sim, LAYERS, _cost(COST), {}, budget=460)              # 60 over int8: b (50) then c (1)
    assert c.precision == {"a": "int8", "b": "a16w8", "c": "a16w8", "d": "int8"}
    assert c.instructions_mixed <= 460 and c.met
    c = choose(sim, LAYERS, _cost(COST), {"a": "a16w8", "b": "int8"}, target_sqnr=40.0)
    assert c.precision["a"] == "a16w8" and c.precision["b"] == "int8" and not c.met   # b forced int8: 40 dB out of reach
    forced = {lay.name: lay.forced for lay in c.layers}
    assert forced == {"a": True, "b": True, "c": False, "d": False}
    # the default: the better scheme's simulated SQNR less half a dB, within 1.5x int8's instructions (600):
    # a (900 more) is out of the budget, so the target is not met and the choice is what 600 buys (b, c)
    c = choose(sim, LAYERS, _cost(COST), {})
    assert c.target_sqnr == pytest.approx(max(c.sqnr_int8, c.sqnr_a16w8) - 0.5, abs=0.01) and c.budget == 600
    assert c.precision == {"a": "int8", "b": "a16w8", "c": "a16w8", "d": "int8"} and not c.met
    assert c.instructions_mixed <= 600
    # where a fits the budget, the default target is met with the fewest layers that meet it
    c = choose(sim, LAYERS, _cost(dict(COST, a=(100, 200))), {})
    assert c.met and c.precision["a"] == "a16w8" and c.instructions_mixed <= 600


class _MisleadingSim(_AdditiveSim):
    """Alone, a, b and c look best per instruction; in the mix only e removes noise."""

    def noise(self, acts, weights=None):
        if len([v for v in acts.values() if v]) <= 1:
            return super().noise(acts, weights)
        return 50.0 - (45.0 if acts.get("e") == "a16w8" else 0.0)


def test_the_greedy_looks_past_the_best_ranked_layers_that_do_not_help_in_the_mix():
    n8 = {"a": 40.0, "b": 40.0, "c": 40.0, "d": 1.0, "e": 10.0}
    n16 = {k: 0.1 for k in n8}
    lay = [Layer(n, "aten.conv2d", "") for n in n8]
    cost = _cost({"a": (100, 110), "b": (100, 110), "c": (100, 110), "d": (100, 110), "e": (100, 200)})
    c = choose(_MisleadingSim(n8, n16), lay, cost, {}, target_sqnr=30.0)
    assert c.precision["e"] == "a16w8" and c.met      # ranked 5th by its noise alone, found after a, b, c, d


class _PairSim(_AdditiveSim):
    """a or b alone in int16 adds noise (their int8 errors cancelled each other); both together remove it."""

    def noise(self, acts, weights=None):
        if len([v for v in acts.values() if v]) <= 1:
            return super().noise(acts, weights)
        a, b = acts.get("a") == "a16w8", acts.get("b") == "a16w8"
        return 50.0 + (10.0 if a != b else 0.0) - (45.0 if a and b else 0.0)


def test_the_greedy_tries_pairs_where_no_single_layer_helps_in_the_mix():
    n8 = {"a": 20.0, "b": 20.0, "c": 5.0}
    n16 = {k: 0.1 for k in n8}
    lay = [Layer(n, "aten.conv2d", "") for n in n8]
    cost = _cost({"a": (100, 110), "b": (100, 110), "c": (100, 110)})
    c = choose(_PairSim(n8, n16), lay, cost, {}, target_sqnr=30.0)
    assert c.precision == {"a": "a16w8", "b": "a16w8", "c": "int8"} and c.met   # noise 5 + 1 (weights): 32 dB
    # a budget that buys one layer only: no pair fits, nothing that helps, all int8
    c = choose(_PairSim(n8, n16), lay, cost, {}, budget=315)
    assert c.precision == {"a": "int8", "b": "int8", "c": "int8"} and c.instructions_mixed == 300


def test_the_choice_prints_every_layer_and_survives_json():
    c = choose(_AdditiveSim(N8, N16), LAYERS, _cost(COST), {"d": "int8"}, target_sqnr=30.0)
    text = c.table()
    assert "target 30.0 dB" in text and "int16 layers 2 of 4" in text and "d" in text
    rows = [ln.split() for ln in text.splitlines()[2:6]]
    assert [r[0] for r in rows] == list("abcd") and [r[2] for r in rows] == ["a16w8", "a16w8", "int8", "int8*"]
    back = Choice.from_json(json.loads(json.dumps(c.to_json())))
    assert back.precision == c.precision and back.table() == text


def test_mixed_reaches_its_target_on_the_calibration_data(model):
    m, x = model
    seen = []
    # the default: the better scheme less half a dB, within 1.5x int8's estimated instructions
    c = tabula.quantize(m, (x[:1],), x, scheme="mixed", report=seen.append).meta["tabula_precision"]
    assert seen == [c] and c.target_sqnr == pytest.approx(max(c.sqnr_int8, c.sqnr_a16w8) - 0.5, abs=0.01)
    assert c.budget == pytest.approx(1.5 * c.instructions_int8) and c.instructions_mixed <= c.budget
    assert c.sqnr_mixed > c.sqnr_int8 + 3.0 and c.met == (c.sqnr_mixed >= c.target_sqnr)
    # that target alone (no budget): met
    gm = tabula.quantize(m, (x[:1],), x, scheme="mixed", target_sqnr=c.target_sqnr)
    c = gm.meta["tabula_precision"]
    assert c.met and c.sqnr_mixed >= c.target_sqnr and c.budget is None
    assert 0 < sum(v == "a16w8" for v in c.precision.values()) < len(c.precision)
    assert c.instructions_int8 < c.instructions_mixed < c.instructions_a16w8
    with torch.no_grad():
        yf = m(x).numpy()
    y = tabula.lower(gm).run(x.numpy())[0]
    y8 = tabula.lower(tabula.quantize(m, (x[:1],), x)).run(x.numpy())[0]
    from tabula.report import sqnr_db

    assert sqnr_db(yf, y) > sqnr_db(yf, y8) + 3.0
    with pytest.raises(ValueError, match="with scheme='mixed'"):
        tabula.quantize(m, (x[:1],), x, scheme="int8", target_sqnr=30.0)
    with pytest.raises(ValueError, match="budget=-1 must be a positive number"):
        tabula.quantize(m, (x[:1],), x, scheme="mixed", budget=-1)


@pytest.mark.qemu
def test_every_boundary_kind_is_bit_exact_on_the_cortex_m55(tmp_path):
    """Codegen and the Helium paths (the int8 kernels writing int32 for an int16 output, the int16 ones
    int48 for an int8 output, then RESCALE) equal the Python reference on every element.  (The portable
    C of the same kernels: tests/ops, against the same reference.)"""
    from tabula.stages import float_stage, run_and_report

    export(tmp_path)
    prec = ",".join(f"{k}={v}" for k, v in BOUNDARIES.items())
    model, data = tmp_path / "mixed.pt2", tmp_path / "test.npz"
    # build only (-j2: the kernels compile beside the quantize stage); the float outputs and the run here,
    # where torch is loaded already (the same stages SCons runs after the build)
    scons("-j2", "board=corstone300", f"build_dir={tmp_path / 'b'}", f"model={model}", f"calib={tmp_path / 'calib.npz'}",
          f"data={data}", f"precision={prec}", "run=0")
    out = tmp_path / "b" / "corstone300" / "mixed"
    floats = float_stage(model, out, data, out / "float_outputs.npz")
    r = run_and_report(out / "firmware.elf", "corstone300", out, data, model, out, float_path=floats)
    assert r["runner"] == "qemu" and r["n_outputs_received"] == 8 and r["device_exit_code"] == 0
    assert r["bit_exact_mismatches"] == 0


def test_scons_refuses_mixed_options_without_the_scheme_in_one_line(tmp_path):
    p = scons("board=host", "target_sqnr=30", f"build_dir={tmp_path}", check=False)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "scons: target_sqnr=30 chooses the precision per layer: give it with scheme=mixed"]
    p = scons("board=host", "scheme=mixed", "precision=classifier", f"build_dir={tmp_path}", check=False)
    assert p.returncode == 2 and "precision entry 'classifier' is not <module or layer>=<int8|a16w8>" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = scons("board=host", "scheme=mixed", "precision=stem.0=a16w8,stem.0=int8", f"build_dir={tmp_path}", check=False)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "scons: precision names stem.0 twice (a16w8, then int8); give each module or layer once"]


def test_a_budget_below_every_mix_says_so():
    c = choose(_AdditiveSim(N8, N16), LAYERS, _cost(COST), {}, budget=300)     # all int8 costs 400
    assert not c.met and c.precision == {n: "int8" for n in "abcd"}
    assert "the budget is below the cheapest mix's estimate (400: int8 and the overrides): nothing fits it" in c.table()
    assert "target" not in c.table().splitlines()[-2]


def test_an_add_of_an_int8_and_an_int16_input_is_charged_as_int16(model):
    from tabula.quantizer.costs import COSTS, cost_model, node_features

    m, x = model
    fg = float_graph(m, (x[:1],), None)
    cost = cost_model(fg, "corstone300")
    add = next(n for n in fg.graph.nodes if n.name == "add")
    kind, f = node_features(add, fg)
    int8, int16 = COSTS["helium"][(kind, "int8")][3], COSTS["helium"][(kind, "int16")][3]
    assert kind == "add" and f[3] > 0 and int16 > int8
    base = cost({})[1]["conv2d"]                               # the add is charged to its first input's layer
    for p in ({"conv2d_2": "a16w8"}, {"add": "a16w8"}):        # the other input int16; the output int16
        assert cost(p)[1]["conv2d"] - base == pytest.approx((int16 - int8) * f[3])


def test_show_warns_when_the_device_ran_over_the_budget(capsys):
    from tabula.report import print_precision

    c = choose(_AdditiveSim(N8, N16), LAYERS, _cost(COST), {}, budget=460).to_json()
    print_precision(c, 450)                                    # within: no warning
    assert "warning" not in capsys.readouterr().out
    print_precision(c, 552)
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ("  warning: the device ran 552 instructions per inference, 20 % over the budget 460 (the cost "
                       "model estimated 451; it misses some kernels' paths: README, Mixed precision); fix: a lower "
                       "budget= or fewer int16 overrides")
