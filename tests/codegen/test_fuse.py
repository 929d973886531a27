"""Codegen's fusions: an int16 table op's TOSA sequence into one tabula_table16_s16 call, and a
zero-point PAD into the convolution that reads it: which ops fuse, what the arena saves, when a group
is left alone.  (Bit-exactness of the fused kernel against the
op sequence: tests/tosa/test_tosa_conformance.py on every code; against the reference on whole models: the
a16w8 end-to-end tests.)"""
from __future__ import annotations

import pytest

from tabula.codegen import generate
from tabula.codegen.arena import plan_arena
from tabula.codegen.fusion import FUSED_TABLE16, fuse_table16
from tabula.report.table_cases import CASES, table_op_graph

CASE = {c.id: c for c in CASES}


def test_every_int16_form_fuses_to_one_op_and_frees_its_intermediates():
    for form, n_ops in (("single", 2), ("split", 5), ("zoom2", 5), ("zoom1+split", 11)):
        g = table_op_graph(CASE["tanh"], "int16", shape=(1, 8, 8, 4), form=form)
        assert len(g.ops) == n_ops
        f = fuse_table16(g)
        assert [o.op for o in f.ops] == [FUSED_TABLE16] and f.ops[0].outputs == ["y"] and f.ops[0].inputs[0] == "x"
        assert len(g.ops) == n_ops  # the IR itself is untouched
        internal = set(g.ops[0].attrs["internal"])  # the group's first op names its intermediates
        assert internal and not internal & set(f.tensors) and internal <= set(g.tensors)
        consts = {n for t in f.ops[0].attrs["terms"] for n in (t["hi"], t["lo"]) if n}
        assert consts == set(f.ops[0].inputs[1:]) and consts <= set(f.constants)
        # arena: x and y only (256 elements of int16, 16-byte aligned) instead of the int32 temporaries too
        assert plan_arena(f).size == 2 * 512 < plan_arena(g).size


def test_a_group_whose_intermediate_is_read_elsewhere_is_left_alone():
    g = table_op_graph(CASE["sigmoid"], "int16", shape=(16,), form="split")
    inner = g.ops[0].attrs["internal"][0]
    g.outputs = ["y", inner]  # the host reads an intermediate: keep the TOSA ops
    assert fuse_table16(g) is g


def test_generated_c_calls_the_fused_kernel(tmp_path):
    g = table_op_graph(CASE["tanh"], "int16", shape=(1, 4, 4, 2), form="zoom1+split")
    gen = generate(g, tmp_path)
    c = gen.model_c.read_text()
    assert c.count("tabula_table16_s16(") == 1 and "tabula_table_s16(" not in c and "tabula_add_s32(" not in c
    assert gen.arena.size == 2 * 64  # x and y, 32 int16 each, 16-byte aligned -> 64 + 64


# --- PAD into CONV2D / DEPTHWISE_CONV2D (fuse_pad) ------------------------------------------------
def _pad_conv_graph(op: str, dtype: str, pad_before, pad_after, conv_pad, pad_value=None, stride=(2, 2)):
    """x [1, 7, 6, C] -> PAD -> CONV2D / DEPTHWISE_CONV2D 3x3 (its own ``conv_pad`` too) -> int32 y."""
    import numpy as np

    from tabula.ir import Graph, Op, Tensor

    c = 3
    zp = 0 if dtype == "int16" else -7
    h, w = 7 + pad_before[1] + pad_after[1], 6 + pad_before[2] + pad_after[2]
    oh = (h + conv_pad[0] + conv_pad[1] - 3) // stride[0] + 1
    ow = (w + conv_pad[2] + conv_pad[3] - 3) // stride[1] + 1
    rng = np.random.default_rng(5)
    g = Graph()
    g.add_tensor(Tensor("x", (1, 7, 6, c), dtype, 0.1, zp))
    g.add_tensor(Tensor("xp", (1, h, w, c + pad_before[3] + pad_after[3]), dtype, 0.1, zp))
    wt = rng.integers(-127, 128, (3, 3, c, 1) if op == "DEPTHWISE_CONV2D" else (4, 3, 3, c)).astype(np.int8)
    cout = c if op == "DEPTHWISE_CONV2D" else 4
    g.add_tensor(Tensor("w", wt.shape, "int8", [0.01] * cout, [0] * cout), wt)
    acc = "int32" if dtype == "int8" else "int48"
    bias = rng.integers(-1000, 1000, cout).astype(np.int32 if dtype == "int8" else np.int64)
    g.add_tensor(Tensor("b", (cout,), acc), bias)
    g.add_tensor(Tensor("y", (1, oh, ow, cout), acc))
    g.add_op(Op("PAD", ["x"], ["xp"], {"pad_before": list(pad_before), "pad_after": list(pad_after),
                                       "pad_value": zp if pad_value is None else pad_value}))
    attrs = {"pad": list(conv_pad), "stride": list(stride), "dilation": [1, 1], "input_zp": zp, "weight_zp": 0}
    if op == "DEPTHWISE_CONV2D":
        attrs["multiplier"] = 1
    g.add_op(Op(op, ["xp", "w", "b"], ["y"], attrs))
    g.inputs, g.outputs = ["x"], ["y"]
    return g


@pytest.mark.host
@pytest.mark.parametrize("op", ["CONV2D", "DEPTHWISE_CONV2D"])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("pads", [([0, 1, 1, 0], [0, 2, 1, 0], [0, 0, 0, 0]), ([0, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 0])])
def test_a_zero_point_pad_folds_into_the_convolution_bit_exact(kernel_lib, rng, op, dtype, pads):
    """The fused op (the conv's own padding grown by the PAD's) == PAD then conv, through the reference
    and through the C kernel codegen calls; no padded tensor is left in the arena."""
    import numpy as np

    from tabula.codegen.fusion import fuse_pad
    from tabula.reference.interpreter import run_graph

    g = _pad_conv_graph(op, dtype, *pads)
    f = fuse_pad(g)
    assert [o.op for o in f.ops] == [op] and f.ops[0].inputs[0] == "x" and "xp" not in f.tensors
    pb, pa, cp = pads
    assert f.ops[0].attrs["pad"] == [cp[0] + pb[1], cp[1] + pa[1], cp[2] + pb[2], cp[3] + pa[2]]
    lo, hi = (-128, 127) if dtype == "int8" else (-32768, 32767)
    x = rng.integers(lo, hi + 1, (1, 7, 6, 3)).astype(np.int8 if dtype == "int8" else np.int16)
    want = run_graph(g, [x])[0]
    np.testing.assert_array_equal(run_graph(f, [x])[0], want)
    a = f.ops[0].attrs
    w, b = f.constants["w"], f.constants["b"]
    kw = dict(pad=a["pad"], stride=a["stride"], dilation=a["dilation"], input_zp=a["input_zp"], weight_zp=0,
              out_hw=want.shape[1:3])
    c = (kernel_lib.depthwise_conv2d if op == "DEPTHWISE_CONV2D" else kernel_lib.conv2d)(x, w, b, **kw)
    np.testing.assert_array_equal(c, want)
    assert plan_arena(f).size < plan_arena(g).size


def test_pads_that_are_not_the_convolutions_padding_stay():
    from tabula.codegen.fusion import fuse_pad

    g = _pad_conv_graph("CONV2D", "int8", [0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0], pad_value=0)  # not the zero point
    assert fuse_pad(g) is g
    g = _pad_conv_graph("CONV2D", "int8", [0, 1, 1, 0], [0, 1, 1, 1], [0, 0, 0, 0])  # pads the channels
    assert fuse_pad(g) is g
    g = _pad_conv_graph("CONV2D", "int8", [0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0])
    g.outputs = ["y", "xp"]  # the padded tensor is read by the host too
    assert fuse_pad(g) is g


def test_the_arena_of_a_residual_block_reaches_its_lower_bound():
    """ResNet-8's first two blocks with their PADs as separate ops (tensor bytes as in the MLPerf
    model): placing the largest tensors first needs 65,536 B; the planner tries other orders and
    ends within 3% of the live-set lower bound (49,152 B; 50,192 B here)."""
    from tabula.codegen import arena
    from tabula.ir import Graph, Op, Tensor

    g = Graph()
    sizes = {"x": (1, 32, 32, 3), "relu": (1, 32, 32, 16), "relu_1": (1, 32, 32, 16), "c2": (1, 32, 32, 16),
             "relu_2": (1, 32, 32, 16), "pad": (1, 33, 33, 16), "relu_3": (1, 16, 16, 32), "c4": (1, 16, 16, 32),
             "c5": (1, 16, 16, 32), "relu_4": (1, 16, 16, 32)}
    for n, shape in sizes.items():
        g.add_tensor(Tensor(n, shape, "int8", 0.1, 0))
    for ins, out in ((["x"], "relu"), (["relu"], "relu_1"), (["relu_1"], "c2"), (["relu", "c2"], "relu_2"),
                     (["relu_2"], "pad"), (["pad"], "relu_3"), (["relu_2"], "c4"), (["relu_3"], "c5"),
                     (["c4", "c5"], "relu_4")):
        g.add_op(Op("X", ins, [out], {}))
    g.inputs, g.outputs = ["x"], ["relu_4"]
    live = arena.live_ranges(g)
    size_of = {n: arena._align(g.tensors[n].nbytes) for n in live}
    first = arena._place(sorted(live, key=lambda k: arena.ORDERS[0](k, size_of, live)), size_of, live)
    assert max(first[n] + size_of[n] for n in live) == 65_536
    plan = arena.plan_arena(g)
    assert plan.lower_bound == 49_152 and plan.size <= 1.03 * plan.lower_bound
    for a in live:  # and it is a valid plan: tensors live together never overlap
        for b in live:
            if a < b and not (live[a][1] < live[b][0] or live[b][1] < live[a][0]):
                assert (plan.offsets[a] + size_of[a] <= plan.offsets[b]) or (plan.offsets[b] + size_of[b] <= plan.offsets[a])


# ---- the passes and their order (tabula.codegen.fusion) ----------------------------------------------

def test_the_order_names_every_pass_of_the_folder_once_and_keeps_every_declared_constraint():
    from tabula.codegen import fusion

    mods = fusion.passes()
    assert sorted(mods) == sorted(fusion.ORDER) == ["fold_input_zp", "fuse_add_requant", "fuse_pad", "fuse_requant",
                                                     "fuse_rescale_clamp", "fuse_softmax", "fuse_table16"]
    fusion.check_order()
    with pytest.raises(ValueError, match="every pass of the folder once"):
        fusion.check_order(fusion.ORDER[:-1])
    with pytest.raises(ValueError, match="every pass of the folder once"):
        fusion.check_order(fusion.ORDER[:-1] + (fusion.ORDER[0],))


def test_a_declared_constraint_that_the_order_breaks_is_refused_with_its_reason():
    from types import SimpleNamespace

    from tabula.codegen import fusion

    ident = lambda g: g  # noqa: E731
    mods = {"fuse_a": SimpleNamespace(__name__="fake.fuse_a_pass", fuse_a=ident, MUST_RUN_BEFORE={"fuse_b": "b reads what a writes"}),
            "fuse_b": SimpleNamespace(__name__="fake.fuse_b_pass", fuse_b=ident, MUST_RUN_BEFORE={})}
    fusion.check_order(("fuse_a", "fuse_b"), mods)
    with pytest.raises(ValueError, match="runs fuse_b before fuse_a, but fuse_a must run first: b reads what a writes"):
        fusion.check_order(("fuse_b", "fuse_a"), mods)
    mods["fuse_a"].MUST_RUN_BEFORE = {"fuse_c": "?"}
    with pytest.raises(ValueError, match="must run before fuse_c, which is no pass of the folder"):
        fusion.check_order(("fuse_a", "fuse_b"), mods)
    del mods["fuse_b"].MUST_RUN_BEFORE
    mods["fuse_a"].MUST_RUN_BEFORE = {}
    with pytest.raises(ValueError, match="must define fuse_b"):
        fusion.check_order(("fuse_a", "fuse_b"), mods)


def _zoo_graphs():
    """IR graphs that exercise every fusion: the op-class zoo (int8, a16w8) and a conv stack with int16
    ramps (hardswish, hardsigmoid, leaky_relu), a table, a residual add and a softmax (a16w8)."""
    import torch
    from fixtures.zoo_model import Zoo
    from torch import nn
    from torch.nn import functional as F

    import tabula

    class ConvAct(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.d = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 1)

        def forward(self, x):
            y = self.c(F.pad(x, (1, 1, 1, 1)))
            a, b = F.hardswish(y), F.hardsigmoid(self.d(y))
            return torch.cat([a, b, F.leaky_relu(y, 0.1), torch.sigmoid(y), torch.softmax(self.d(a + b), dim=1)], 1)

    torch.manual_seed(0)
    for model, scheme in ((Zoo(), "int8"), (Zoo(), "a16w8"), (ConvAct(), "a16w8")):
        x = torch.randn(16, 3, 8, 8)
        ep = torch.export.export(model.eval(), (x[:1],))
        gm = tabula.quantize(ep, (x[:1],), [(x[i : i + 1],) for i in range(16)], scheme=scheme)
        yield tabula.lower(gm, (x[:1],)).graph


def test_every_pair_of_passes_whose_order_matters_is_declared():
    """Run each pair of passes alone in both orders: where the fused graphs differ, the pass that comes
    first in ORDER must declare the other in MUST_RUN_BEFORE.  Today every pair commutes on these graphs,
    and each pass fuses something on them."""
    import itertools

    from tabula.codegen import fusion

    mods = fusion.passes()

    def fused(g, order):
        for name in order:
            g = getattr(mods[name], name)(g)
        return [(o.op, tuple(o.inputs), tuple(o.outputs), bool(o.attrs.get("requant")), bool(o.attrs.get("folded")),
                 tuple(o.attrs.get("clamp", ()))) for o in g.ops]

    changed_by = {name: 0 for name in fusion.ORDER}
    for g in _zoo_graphs():
        for name in fusion.ORDER:
            changed_by[name] += fused(g, [name]) != fused(g, [])
        for first, second in itertools.combinations(fusion.ORDER, 2):
            if fused(g, [first, second]) != fused(g, [second, first]):
                assert second in mods[first].MUST_RUN_BEFORE, f"{first} must run before {second}: declare why"
    assert all(changed_by.values()), changed_by  # each pass has work on these graphs


# ---- RESCALE + CLAMP at a precision boundary (fuse_rescale_clamp) -------------------------------------------
def _boundary_graph(din: str, dout: str, bounds, per_channel: bool = True, c: int = 6):
    """acc (int32 / int48) [1, 5, 3, c] -> RESCALE to ``dout`` -> CLAMP ``bounds`` -> y: a precision boundary
    of scheme=mixed as lowering leaves it when the accumulator op cannot requantize in its epilogue."""
    import numpy as np

    from tabula.ir import Graph, Op, Tensor

    rng = np.random.default_rng(3)
    scale32 = din == "int32"
    n = c if per_channel else 1
    m = rng.integers(2**30 if scale32 else 2**14, 2**31 if scale32 else 2**15, n).tolist()
    s = rng.integers(30, 34, n).tolist() if scale32 else rng.integers(24, 30, n).tolist()
    g = Graph()
    g.add_tensor(Tensor("acc", (1, 5, 3, c), din))
    g.add_tensor(Tensor("r", (1, 5, 3, c), dout))
    g.add_tensor(Tensor("y", (1, 5, 3, c), dout))
    g.add_op(Op("RESCALE", ["acc"], ["r"], {"input_zp": 0, "output_zp": -128 if dout == "int8" else 0, "multiplier": m,
                                          "shift": s, "scale32": scale32}))
    g.add_op(Op("CLAMP", ["r"], ["y"], {"min": bounds[0], "max": bounds[1]}))
    g.inputs, g.outputs = ["acc"], ["y"]
    return g


@pytest.mark.host
@pytest.mark.parametrize("din, dout, bounds", [("int32", "int16", (0, 32767)), ("int64", "int8", (-100, 90)),
                                                ("int32", "int8", (-128, 5)), ("int64", "int16", (-7, 32767))])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
def test_a_boundary_rescale_takes_its_clamp_bit_exact(kernel_lib, rng, din, dout, bounds, per_channel):
    """RESCALE + CLAMP -> one RESCALE with ``clamp``: its reference (run_fused), the C kernel codegen calls
    (tabula_rescale_clamp_<in>_<out>) and the IR pair through the reference interpreter agree bit for bit;
    the intermediate leaves the graph."""
    import numpy as np

    from tabula.codegen.fusion import fuse_rescale_clamp
    from tabula.codegen.fusion.fuse_rescale_clamp_pass import run_fused
    from tabula.reference.interpreter import run_graph

    ir_din = "int48" if din == "int64" else din
    g = _boundary_graph(ir_din, dout, bounds, per_channel)
    f = fuse_rescale_clamp(g)
    assert [o.op for o in g.ops] == ["RESCALE", "CLAMP"]  # the IR keeps the pair
    assert [o.op for o in f.ops] == ["RESCALE"] and f.ops[0].inputs == ["acc"] and f.ops[0].outputs == ["y"]
    assert f.ops[0].attrs["clamp"] == list(bounds) and "r" not in f.tensors and "r" in g.tensors
    mag = 2**22 if din == "int32" else 2**30
    x = rng.integers(-mag, mag, (1, 5, 3, 6), endpoint=True).astype(din)
    x.reshape(-1)[:4] = [-mag, mag, 0, -1]
    want = run_graph(g, [x])[0]
    assert want.dtype == np.dtype(dout) and want.min() >= bounds[0] and want.max() <= bounds[1]
    np.testing.assert_array_equal(run_fused(f.ops[0], x, dout), want)
    a = f.ops[0].attrs
    got = kernel_lib.rescale(x, input_zp=a["input_zp"], output_zp=a["output_zp"], multiplier=a["multiplier"],
                             shift=a["shift"], output_dtype=dout, clamp=a["clamp"])
    np.testing.assert_array_equal(got, want)
    assert plan_arena(f).size <= plan_arena(g).size  # (the pair could already reuse acc's bytes for y)


def test_a_boundary_rescale_and_clamp_are_one_kernel_call_in_model_c(tmp_path):
    g = _boundary_graph("int32", "int16", (0, 32767))
    c = generate(g, tmp_path).model_c.read_text()
    assert c.count("tabula_rescale_clamp_s32_s16(") == 1 and "tabula_clamp_s16(" not in c
    assert ", 0, 32767, " in c


def test_a_rescale_and_clamp_that_must_stay_apart_stay():
    from tabula.codegen.fusion import fuse_rescale_clamp

    g = _boundary_graph("int32", "int16", (0, 32767))
    g.outputs = ["y", "r"]  # the host reads the unclamped tensor too
    assert fuse_rescale_clamp(g) is g
    g = _boundary_graph("int32", "int32", (0, 32767))  # no clamping kernel for an int32 output
    g.ops[1].op = "RELU"  # (no int32 CLAMP either: any other reader keeps the RESCALE alone)
    assert fuse_rescale_clamp(g) is g


def test_an_accumulator_rescale_and_clamp_still_fuse_into_the_epilogue():
    """The whole chain: the conv's RESCALE and CLAMP go to the conv's requant block (fuse_requant runs
    first), not to a clamping RESCALE."""
    import numpy as np

    from tabula.codegen.fusion import fuse_all
    from tabula.ir import Op, Tensor

    g = _pad_conv_graph("CONV2D", "int16", [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1])
    y = g.tensors["y"]
    g.add_tensor(Tensor("r", y.shape, "int16"))
    g.add_tensor(Tensor("z", y.shape, "int16"))
    g.add_op(Op("RESCALE", ["y"], ["r"], {"input_zp": 0, "output_zp": 0, "multiplier": [2**14] * 4, "shift": [20] * 4,
                                        "scale32": False}))
    g.add_op(Op("CLAMP", ["r"], ["z"], {"min": 0, "max": 32767}))
    g.outputs = ["z"]
    f = fuse_all(g)
    assert [o.op for o in f.ops] == ["CONV2D"] and f.ops[0].attrs.get("requant") and f.ops[0].outputs == ["z"]
    block = f.constants[f.ops[0].inputs[-1]]
    assert 0 in np.asarray(block).tolist()[:4]  # out_min of the block is the CLAMP's 0


# ---- an accumulator op's RESCALE to the other activation type (fuse_requant at a precision boundary) ---------
def _dw_boundary_graph(din: str, dout: str, bounds, c: int = 11):
    """x [1, 6, 5, c] ``din`` -> DEPTHWISE_CONV2D 3x3 pad 1 (int48 / int32 acc) -> RESCALE to ``dout`` (the other
    activation type) -> CLAMP ``bounds`` -> y: a depthwise layer at a precision boundary of scheme=mixed, as
    lowering writes it."""
    import numpy as np

    from tabula.ir import Graph, Op, Tensor

    rng = np.random.default_rng(11)
    wide = din == "int16"
    acc = "int48" if wide else "int32"
    zp = 0 if wide else -9
    g = Graph()
    g.add_tensor(Tensor("x", (1, 6, 5, c), din, 0.1, zp))
    wt = rng.integers(-127, 128, (3, 3, c, 1)).astype(np.int8)
    g.add_tensor(Tensor("w", wt.shape, "int8", [0.01] * c, 0), wt)
    g.add_tensor(Tensor("b", (c,), acc), rng.integers(-5000, 5000, c).astype(np.int64 if wide else np.int32))
    for name, dt in (("acc", acc), ("r", dout), ("y", dout)):
        g.add_tensor(Tensor(name, (1, 6, 5, c), dt))
    g.add_op(Op("DEPTHWISE_CONV2D", ["x", "w", "b"], ["acc"], {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1],
                                                              "input_zp": zp, "weight_zp": 0, "multiplier": 1}))
    if wide:   # int48 -> int8: apply_scale_16, any int8 zero point
        m, s, ozp = rng.integers(2**14, 2**15, c).tolist(), rng.integers(27, 30, c).tolist(), -3
    else:      # int32 -> int16: apply_scale_32, zero point 0
        m, s, ozp = rng.integers(2**30, 2**31, c).tolist(), rng.integers(33, 37, c).tolist(), 0
    g.add_op(Op("RESCALE", ["acc"], ["r"], {"input_zp": 0, "output_zp": ozp, "multiplier": m, "shift": s,
                                          "scale32": not wide}))
    g.add_op(Op("CLAMP", ["r"], ["y"], {"min": bounds[0], "max": bounds[1]}))
    g.inputs, g.outputs = ["x"], ["y"]
    return g


@pytest.mark.host
@pytest.mark.parametrize("din, dout, bounds, kernel", [("int16", "int8", (-3, 127), "tabula_depthwise_conv2d_s16_s8"),
                                                        ("int8", "int16", (0, 2000), "tabula_depthwise_conv2d_s8_s16")])
def test_a_depthwise_boundary_is_one_kernel_call_bit_exact(tmp_path, kernel_lib, rng, din, dout, bounds, kernel):
    """DEPTHWISE_CONV2D, its RESCALE to the other activation type and the CLAMP: one accumulator op with a
    requant block (no int32 / int48 tensor, no RESCALE or CLAMP kernel in model.c), whose kernel on the host
    equals the IR sequence through the reference interpreter on every element."""
    import numpy as np

    from tabula import requant
    from tabula.codegen.fusion import fuse_all
    from tabula.reference.interpreter import run_graph

    g = _dw_boundary_graph(din, dout, bounds)
    if din == "int8":  # int32 -> int16 with a shift below 33: the kernel would requantize per value in 64 bits
        slow = _dw_boundary_graph(din, dout, bounds)
        slow.ops[1].attrs["shift"] = [32] + list(slow.ops[1].attrs["shift"][1:])
        assert [o.op for o in fuse_all(slow).ops] == ["DEPTHWISE_CONV2D", "RESCALE"]
    f = fuse_all(g)
    assert [o.op for o in f.ops] == ["DEPTHWISE_CONV2D"] and f.ops[0].attrs["requant"]
    assert f.ops[0].outputs == ["y"] and "acc" not in f.tensors and "r" not in f.tensors
    block = requant.unpack(f.constants[f.ops[0].inputs[3]])
    assert (block.out_min, block.out_max) == bounds
    c = generate(g, tmp_path).model_c.read_text()
    assert c.count(f"{kernel}(") == 1 and "tabula_rescale" not in c and "tabula_clamp" not in c
    lo, hi = (-32768, 32767) if din == "int16" else (-128, 127)
    x = rng.integers(lo, hi, g.tensors["x"].shape, endpoint=True).astype(din)
    want = run_graph(g, [x])[0]
    a = g.ops[0].attrs
    got = kernel_lib.depthwise_conv2d(x, g.constants["w"], g.constants["b"], pad=a["pad"], stride=a["stride"],
                                      dilation=a["dilation"], input_zp=a["input_zp"], weight_zp=0,
                                      requant=f.constants[f.ops[0].inputs[3]], out_dtype=dout)
    np.testing.assert_array_equal(got, want)
    assert want.dtype == np.dtype(dout) and (want == bounds[0]).any() and (want == bounds[1]).any()


def _conv16_boundary_graph(c: int = 5, cout: int = 9):
    """x int16 [1, 6, 5, c] -> CONV2D 3x3 pad 1 (int48 acc) -> RESCALE to int8 (apply_scale_16, zero point -3)
    -> CLAMP [-3, 127] (an int8 ReLU) -> y: an int16 layer's conv at a precision boundary of scheme=mixed."""
    import numpy as np

    from tabula.ir import Graph, Op, Tensor

    rng = np.random.default_rng(13)
    g = Graph()
    g.add_tensor(Tensor("x", (1, 6, 5, c), "int16", 0.1, 0))
    wt = rng.integers(-127, 128, (cout, 3, 3, c)).astype(np.int8)
    g.add_tensor(Tensor("w", wt.shape, "int8", [0.01] * cout, 0), wt)
    g.add_tensor(Tensor("b", (cout,), "int48"), rng.integers(-5000, 5000, cout).astype(np.int64))
    for name, dt in (("acc", "int48"), ("r", "int8"), ("y", "int8")):
        g.add_tensor(Tensor(name, (1, 6, 5, cout), dt))
    g.add_op(Op("CONV2D", ["x", "w", "b"], ["acc"], {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1],
                                                    "input_zp": 0, "weight_zp": 0}))
    m, s = rng.integers(2**14, 2**15, cout).tolist(), rng.integers(27, 30, cout).tolist()
    g.add_op(Op("RESCALE", ["acc"], ["r"], {"input_zp": 0, "output_zp": -3, "multiplier": m, "shift": s,
                                          "scale32": False}))
    g.add_op(Op("CLAMP", ["r"], ["y"], {"min": -3, "max": 127}))
    g.inputs, g.outputs = ["x"], ["y"]
    return g


@pytest.mark.host
def test_an_int16_conv_boundary_is_one_kernel_call_bit_exact(tmp_path, kernel_lib, rng):
    """CONV2D on int16, its RESCALE to int8 and the CLAMP: one tabula_conv2d_s16_s8 call with a requant block
    (no int48 tensor, no RESCALE or CLAMP kernel in model.c), equal on the host to the IR sequence through the
    reference interpreter on every element."""
    import numpy as np

    from tabula import requant
    from tabula.codegen.fusion import fuse_all
    from tabula.reference.interpreter import run_graph

    g = _conv16_boundary_graph()
    f = fuse_all(g)
    assert [o.op for o in f.ops] == ["CONV2D"] and f.ops[0].attrs["requant"]
    assert f.ops[0].outputs == ["y"] and "acc" not in f.tensors and "r" not in f.tensors
    block = requant.unpack(f.constants[f.ops[0].inputs[3]])
    assert (block.output_zp, block.out_min, block.out_max) == (-3, -3, 127)
    c = generate(g, tmp_path).model_c.read_text()
    assert c.count("tabula_conv2d_s16_s8(") == 1 and "tabula_rescale" not in c and "tabula_clamp" not in c
    x = rng.integers(-32768, 32767, g.tensors["x"].shape, endpoint=True).astype(np.int16)
    want = run_graph(g, [x])[0]
    a = g.ops[0].attrs
    got = kernel_lib.conv2d(x, g.constants["w"], g.constants["b"], pad=a["pad"], stride=a["stride"],
                            dilation=a["dilation"], input_zp=0, weight_zp=0,
                            requant=f.constants[f.ops[0].inputs[3]], out_dtype="int8")
    np.testing.assert_array_equal(got, want)
    assert want.dtype == np.int8 and (want == -3).any() and (want == 127).any()


def _conv_boundary_graph(weight_zp: int = 0, c: int = 6, cout: int = 10, shifts=(33, 36)):
    """x int8 [1, 5, 7, c] -> CONV2D 3x3 pad 1 (int32 acc) -> RESCALE to int16 -> CLAMP [0, 32767] (an int16
    ReLU) -> y: an int8 layer's conv at a precision boundary of scheme=mixed."""
    import numpy as np

    from tabula.ir import Graph, Op, Tensor

    rng = np.random.default_rng(12)
    g = Graph()
    g.add_tensor(Tensor("x", (1, 5, 7, c), "int8", 0.1, -20))
    wt = rng.integers(-127, 128, (cout, 3, 3, c)).astype(np.int8)
    g.add_tensor(Tensor("w", wt.shape, "int8", [0.01] * cout, 0), wt)
    g.add_tensor(Tensor("b", (cout,), "int32"), rng.integers(-300000, 300000, cout).astype(np.int32))
    g.add_tensor(Tensor("acc", (1, 5, 7, cout), "int32"))
    g.add_tensor(Tensor("r", (1, 5, 7, cout), "int16"))
    g.add_tensor(Tensor("y", (1, 5, 7, cout), "int16"))
    g.add_op(Op("CONV2D", ["x", "w", "b"], ["acc"], {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1],
                                                    "input_zp": -20, "weight_zp": weight_zp}))
    g.add_op(Op("RESCALE", ["acc"], ["r"], {"input_zp": 0, "output_zp": 0, "multiplier": rng.integers(2**30, 2**31, cout).tolist(),
                                          "shift": rng.integers(*shifts, cout).tolist(), "scale32": True}))
    g.add_op(Op("CLAMP", ["r"], ["y"], {"min": 0, "max": 32767}))
    g.inputs, g.outputs = ["x"], ["y"]
    return g


@pytest.mark.host
def test_an_int8_conv_boundary_is_one_folded_kernel_call_bit_exact(tmp_path, kernel_lib, rng):
    """CONV2D int8 -> RESCALE int32 -> int16 -> CLAMP: one folded CONV2D with a requant block calling
    tabula_conv2d_s8_s16_folded in model.c, equal on the host to the IR sequence through the reference; with a
    weight zero point (no folded form), or a shift below 33 (the kernel's vector requantization needs 33 or
    more), the RESCALE stays its own kernel."""
    import numpy as np

    from tabula.codegen.fusion import fuse_all
    from tabula.reference.interpreter import run_graph

    g = _conv_boundary_graph()
    f = fuse_all(g)
    assert [o.op for o in f.ops] == ["CONV2D"] and f.ops[0].attrs["requant"] and f.ops[0].attrs["folded"]
    assert "acc" not in f.tensors and "r" not in f.tensors
    c = generate(g, tmp_path / "a").model_c.read_text()
    assert c.count("tabula_conv2d_s8_s16_folded(") == 1 and "tabula_rescale" not in c and "tabula_clamp" not in c
    x = rng.integers(-128, 128, g.tensors["x"].shape).astype(np.int8)
    want = run_graph(g, [x])[0]
    op = f.ops[0]
    got = kernel_lib.conv2d_folded(x, f.constants["w"], f.constants[op.inputs[2]], pad=[1, 1, 1, 1], stride=[1, 1],
                                   dilation=[1, 1], pad_value=-20, requant=f.constants[op.inputs[3]], out_dtype="int16")
    np.testing.assert_array_equal(got, want)
    assert (want == 0).any() and (want == 32767).any() and ((want > 0) & (want < 32767)).any()
    assert [o.op for o in fuse_all(_conv_boundary_graph(shifts=(32, 33))).ops] == ["CONV2D", "RESCALE"]
    g = _conv_boundary_graph(weight_zp=3)
    assert [o.op for o in fuse_all(g).ops] == ["CONV2D", "RESCALE"]
    c = generate(g, tmp_path / "b").model_c.read_text()
    assert "tabula_conv2d_s8_s16_folded(" not in c and c.count("tabula_rescale_clamp_s32_s16(") == 1


# ---- a residual ADD whose inputs and output do not share a type (scheme=mixed; fuse_add_requant) -------
@pytest.mark.parametrize("combo", [("int8", "int16", "int16"), ("int16", "int8", "int8"), ("int16", "int16", "int8")])
def test_a_mixed_dtype_residual_add_is_one_kernel_call_in_model_c(tmp_path, combo):
    """RESCALE a (int8 / int16) -> int32, RESCALE b -> int32, ADD, RESCALE -> the output's type, CLAMP (the
    lowering's residual add with its ReLU): one tabula_add_requant_<ta>_<tb>_<to> call, no RESCALE, ADD or
    CLAMP kernel, no int32 tensor in the arena.  (Its bit-exactness against the sequence run by the
    reference: tests/ops/test_add_requant.py, test_mixed_fusion_equals_the_graph.)"""
    from tabula.codegen.fusion import FUSED_ADD_REQUANT, fuse_add_requant
    from tabula.ir import Graph, Op, Tensor

    shape, bits = (1, 8, 8, 16), {"int8": 8, "int16": 15}
    zp = {n: (0 if t == "int16" else 3) for n, t in zip("aby", combo)}
    g = Graph()
    g.add_tensor(Tensor("a", shape, combo[0], 0.05, zp["a"]))
    g.add_tensor(Tensor("b", shape, combo[1], 0.001, zp["b"]))
    for n in ("a32", "b32", "acc"):
        g.add_tensor(Tensor(n, shape, "int32"))
    g.add_tensor(Tensor("y", shape, combo[2], 0.1, zp["y"]))
    g.add_tensor(Tensor("r", shape, combo[2], 0.1, zp["y"]))
    g.add_op(Op("RESCALE", ["a"], ["a32"], {"input_zp": zp["a"], "output_zp": 0, "multiplier": [1 << 30], "shift": [bits[combo[0]] + 3]}))
    g.add_op(Op("RESCALE", ["b"], ["b32"], {"input_zp": zp["b"], "output_zp": 0, "multiplier": [3 << 29], "shift": [bits[combo[1]] + 4]}))
    g.add_op(Op("ADD", ["a32", "b32"], ["acc"], {}))
    g.add_op(Op("RESCALE", ["acc"], ["y"], {"input_zp": 0, "output_zp": zp["y"], "multiplier": [1 << 30], "shift": [59 - bits[combo[2]]]}))
    g.add_op(Op("CLAMP", ["y"], ["r"], {"min": zp["y"], "max": 127 if combo[2] == "int8" else 32767}))
    g.inputs, g.outputs = ["a", "b"], ["r"]
    assert [o.op for o in fuse_add_requant(g).ops] == [FUSED_ADD_REQUANT]
    gen = generate(g, tmp_path)
    c = gen.model_c.read_text()
    name = "tabula_add_requant_" + "_".join("s8" if t == "int8" else "s16" for t in combo)
    assert c.count("tabula_add_requant_") == 1 and c.count(f"{name}(") == 1
    assert "tabula_rescale" not in c and "tabula_add_s32(" not in c and "tabula_clamp" not in c
    n = 8 * 8 * 16
    assert gen.arena.size <= sum(n * (1 if t == "int8" else 2) for t in combo)  # a, b and r only: no int32 tensor
    assert gen.arena.size < plan_arena(g).size
