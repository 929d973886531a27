"""Integer ranges are proven at build time (tabula.lowering.bound_accumulators_pass): every bias and
accumulator of CONV2D / FULLY_CONNECTED / MATMUL and every AVG_POOL2D sum fits its type, is made to fit
(a channel rescaled, a pool split) or is refused by name -- never a wrap.  Known failures before: a
pruned linear row (zero weights, bias 4.0) got an int32 bias wrapped to -2^31; an a16w8 global average
pool over 300x300 overflowed the int32 sum."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from tabula.errors import LoweringError
from tabula.ir import Graph, Op, Tensor, verify
from tabula.lowering.bound_accumulators_pass import bound_accumulators
from tabula.qmath import quantize_multiplier
from tabula.reference.interpreter import run_graph
from tabula.report import sqnr_db

INT32_MAX = 2**31 - 1


# ---- whole models -------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_pruned_row_with_a_bias_gives_the_bias(scheme):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4)).eval()
    with torch.no_grad():
        model[0].weight[2] = 0.0  # a pruned output row: its weight scale is the observer's epsilon
        model[0].bias[2] = 4.0
    x = torch.randn(64, 8)
    gm = tabula.quantize(model, (x[:1],), x, scheme=scheme)
    program = tabula.lower(gm)
    got = program.run(x.numpy())[0]
    with torch.no_grad():
        ref = model(x).numpy()
        sim = np.concatenate([gm(x[i : i + 1]).numpy() for i in range(x.shape[0])])
    out = program.output_qparams[0]
    # the bias (as far as the output grid reaches: the observer may clip its top), not -2^31 LSB
    assert np.abs(got[:, 2] - sim[:, 2]).max() <= out.scale * 1.0001
    assert np.abs(got[:, 2] - 4.0).max() <= 0.01 * 4.0
    assert sqnr_db(ref, got) > (35 if scheme == "int8" else 50)
    g = program.graph
    fc = next(o for o in g.ops if o.op == "FULLY_CONNECTED")
    b = g.tensors[fc.inputs[2]]
    assert b.dtype == ("int32" if scheme == "int8" else "int48")
    bias = g.constants[b.name].astype(np.int64)
    assert abs(int(bias[2]) * b.scale[2] - 4.0) <= b.scale[2]


def test_a16w8_global_average_pool_over_300x300_is_split_and_exact(kernel_lib):
    class Pool(nn.Module):
        def forward(self, x):
            return nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)

    torch.manual_seed(0)
    x = torch.rand(2, 1, 300, 300) * 2 - 0.2
    gm = tabula.quantize(Pool(), (x[:1],), x, scheme="a16w8")
    program = tabula.lower(gm)
    g = program.graph
    pools = [o for o in g.ops if o.op == "AVG_POOL2D"]
    assert len(pools) == 2
    (kh1, kw1), (kh2, kw2) = pools[0].attrs["kernel"], pools[1].attrs["kernel"]
    assert kh1 * kh2 == 300 and kw1 * kw2 == 300
    assert max(kh1 * kw1, kh2 * kw2) * 32768 <= INT32_MAX  # each sum fits int32
    out = program.output_qparams[0]
    for i in range(2):
        xi = x[i : i + 1]
        got = program.run(xi.numpy())[0]
        assert abs(float(got[0, 0]) - float(gm(xi)[0, 0])) <= 1.0001 * out.scale  # two roundings: <= 1 LSB
        assert abs(float(got[0, 0]) - float(xi.mean())) <= 2 * out.scale
    # the C kernels compute the two pools bit for bit
    (xq,) = program.quantize_inputs(x[:1].numpy())
    mid = kernel_lib.avg_pool2d(xq, kernel=[kh1, kw1], stride=[kh1, kw1], pad=[0, 0, 0, 0])
    res = kernel_lib.avg_pool2d(mid, kernel=[kh2, kw2], stride=[kh2, kw2], pad=[0, 0, 0, 0])
    np.testing.assert_array_equal(res.reshape(-1), program.run_int(xq)[0].reshape(-1))


# ---- the pass on hand-made graphs ---------------------------------------------------------------
def _fc_graph(w, bias, bias_dtype="int32", x_zp=127, w_scale=None, out_scale=1.0, share_weights=False):
    """x int8 [1, K] (zero point x_zp) -> FULLY_CONNECTED -> acc int32 -> RESCALE -> y int8.
    ``share_weights``: a second FULLY_CONNECTED reads the same weight tensor."""
    w = np.asarray(w, np.int8)
    cout, k = w.shape
    w_scale = list(w_scale or [1e-3] * cout)
    acc_scale = [0.5e-6 * s / 1e-3 for s in w_scale]  # x scale 5e-7
    g = Graph()
    g.add_tensor(Tensor("x", (1, k), "int8", 5e-7, x_zp))
    g.add_tensor(Tensor("w", (cout, k), "int8", w_scale), w)
    g.add_tensor(Tensor("b", (cout,), bias_dtype, acc_scale), np.asarray(bias, np.int64))
    g.inputs = ["x"]
    for i in range(2 if share_weights else 1):
        b_name = "b"
        if i:
            b_name = "b2"
            g.add_tensor(Tensor("b2", (cout,), "int32", acc_scale), np.zeros(cout, np.int64))
        g.add_tensor(Tensor(f"acc{i}", (1, cout), "int32", acc_scale))
        g.add_tensor(Tensor(f"y{i}", (1, cout), "int8", out_scale, 0))
        g.add_op(Op("FULLY_CONNECTED", ["x", "w", b_name], [f"acc{i}"], {"input_zp": x_zp, "weight_zp": 0}, f"fc{i}"))
        pairs = [quantize_multiplier(s / out_scale) for s in acc_scale]
        g.add_op(Op("RESCALE", [f"acc{i}"], [f"y{i}"], {"input_zp": 0, "output_zp": 0, "multiplier": [m for m, _ in pairs],
                                                       "shift": [s for _, s in pairs], "scale32": True}, f"fc{i}"))
        g.outputs.append(f"y{i}")
    return g


def _extreme_inputs(k):
    return [np.full((1, k), -128, np.int8), np.full((1, k), 127, np.int8)]


def test_an_accumulator_bound_at_int32_max_is_left_alone():
    k = 10
    reach = 255 * 127 * k  # x - zp reaches -255; |w| = 127
    g = _fc_graph([[127] * k, [-127] * k], [INT32_MAX - reach, -(INT32_MAX - reach)])
    before = {n: a.copy() for n, a in g.constants.items()}
    bound_accumulators(g)
    verify(g)
    for n, a in before.items():
        np.testing.assert_array_equal(g.constants[n], a)
    for x in _extreme_inputs(k):
        run_graph(g, [x])  # never beyond int32


def test_one_past_int32_max_rescales_that_channel_only():
    k = 10
    reach = 255 * 127 * k
    g = _fc_graph([[127] * k, [5] * k], [INT32_MAX - reach + 1, 1000])
    bound_accumulators(g)
    verify(g)
    w, b = g.constants["w"], g.constants["b"]
    assert w[0].tolist() == [64] * k and w[1].tolist() == [5] * k  # 127 / 2 -> 64 (half to even), row 1 kept
    assert int(b[0]) == round((INT32_MAX - reach + 1) / 2) and int(b[1]) == 1000
    t = g.tensors
    assert t["w"].scale == pytest.approx([2e-3, 1e-3]) and t["acc0"].scale == pytest.approx([1e-6, 0.5e-6])
    assert t["b"].scale == t["acc0"].scale
    m, s = quantize_multiplier(1e-6)
    resc = g.ops[1].attrs
    assert (resc["multiplier"][0], resc["shift"][0]) == (m, s)
    for x in _extreme_inputs(k):
        run_graph(g, [x])


def test_a_bias_beyond_int32_on_a_zero_row_is_exact_after_rescaling():
    g = _fc_graph([[0, 0, 0], [3, -2, 1]], [5 * 2**33, -7], bias_dtype="int48", w_scale=[2**-24, 1e-3])
    bound_accumulators(g)
    verify(g)
    b = g.tensors["b"]
    assert b.dtype == "int32" and g.constants["b"].dtype == np.int32
    assert int(g.constants["b"][0]) * b.scale[0] == pytest.approx(5 * 2**33 * 0.5e-6 * 2**-24 / 1e-3)
    # 5 * 2^33 / 2^5 = 1.34e9 is the first to fit int32; a zero row stays exactly zero
    assert g.constants["w"][0].tolist() == [0, 0, 0] and g.tensors["w"].scale[0] == 2**-24 * 2**5


def test_rescaling_that_would_move_the_output_is_refused_by_name():
    k = 10
    reach = 255 * 127 * k
    g = _fc_graph([[127] * k, [5] * k], [INT32_MAX - reach + 1, 0], out_scale=1e-9)
    with pytest.raises(LoweringError, match=r"FULLY_CONNECTED \(fc0\).*output channel 0.*a16w8"):
        bound_accumulators(g)


def test_a_shared_weight_tensor_is_copied_before_one_op_rescales_it():
    k = 10
    reach = 255 * 127 * k
    g = _fc_graph([[127] * k, [5] * k], [INT32_MAX - reach + 1, 0], share_weights=True)
    bound_accumulators(g)
    verify(g)
    fc0, fc1 = (o for o in g.ops if o.op == "FULLY_CONNECTED")
    assert fc1.inputs[1] == "w" and g.constants["w"][0].tolist() == [127] * k
    assert fc0.inputs[1] != "w" and g.constants[fc0.inputs[1]][0].tolist() == [64] * k


def _matmul_graph(c, dtype="int8", zp=127):
    g = Graph()
    g.add_tensor(Tensor("a", (1, 1, c), dtype, 0.1, zp))
    g.add_tensor(Tensor("b", (1, c, 1), dtype, 0.1, zp))
    g.add_tensor(Tensor("acc", (1, 1, 1), "int32" if dtype == "int8" else "int48", 0.01))
    g.inputs, g.outputs = ["a", "b"], ["acc"]
    g.add_op(Op("MATMUL", ["a", "b"], ["acc"], {"a_zp": zp, "b_zp": zp}, "attention.py:3 node matmul"))
    return g


def test_matmul_sums_are_bounded():
    bound_accumulators(_matmul_graph(33025))  # 33025 * 255 * 255 <= INT32_MAX
    with pytest.raises(LoweringError, match=r"MATMUL \(attention.py:3 node matmul\).*C = 33026"):
        bound_accumulators(_matmul_graph(33026))
    bound_accumulators(_matmul_graph(100_000, "int16", 0))  # int48


def _pool_graph(h, w, kernel, stride, dtype="int16", pad=(0, 0, 0, 0)):
    g = Graph()
    g.add_tensor(Tensor("x", (1, h, w, 2), dtype, 0.01, 0))
    oh, ow = (h + pad[0] + pad[1] - kernel[0]) // stride[0] + 1, (w + pad[2] + pad[3] - kernel[1]) // stride[1] + 1
    g.add_tensor(Tensor("y", (1, oh, ow, 2), dtype, 0.01, 0))
    g.inputs, g.outputs = ["x"], ["y"]
    g.add_op(Op("AVG_POOL2D", ["x"], ["y"], {"kernel": list(kernel), "stride": list(stride), "pad": list(pad),
                                             "input_zp": 0, "output_zp": 0}, "net.py:9 node pool"))
    return g


@pytest.mark.parametrize("h, w, kernel, stride, n_pools", [
    (255, 257, (255, 257), (255, 257), 1),  # 65,535 taps x 32768 fits int32
    (256, 256, (256, 256), (256, 256), 2),  # 65,536 taps: split
    (300, 300, (300, 300), (300, 300), 2),
    (257, 257, (257, 257), (257, 257), 2),  # 257 is prime: 1x257 then 257x1
    (600, 455, (300, 450), (300, 450), 2),  # two windows down, the last 5 columns unused: still tiled
    (18, 600, (3, 300), (3, 300), 1),
])
def test_avg_pool_sums_fit_or_are_split(h, w, kernel, stride, n_pools, rng):
    g = _pool_graph(h, w, kernel, stride)
    x = rng.integers(-32768, 32767, (1, h, w, 2), endpoint=True).astype(np.int16)
    x[0, : kernel[0], : kernel[1], 0] = -32768  # the extreme sum in one window
    bound_accumulators(g)
    verify(g)
    assert [o.op for o in g.ops] == ["AVG_POOL2D"] * n_pools
    got = run_graph(g, [x])[0].astype(np.int64)
    oh, ow = got.shape[1:3]
    want = x[:, : oh * kernel[0], : ow * kernel[1]].astype(np.float64)
    want = want.reshape(1, oh, kernel[0], ow, kernel[1], 2).mean(axis=(2, 4))
    assert np.abs(got - want).max() <= 1.0  # one pool rounds once, a split pool twice


@pytest.mark.parametrize("kernel, stride, pad", [((256, 256), (1, 1), (0, 0, 0, 0)),  # overlapping windows
                                               ((256, 256), (256, 256), (1, 1, 1, 1))])  # padded
def test_avg_pools_that_cannot_be_split_are_refused_by_name(kernel, stride, pad):
    g = _pool_graph(258, 258, kernel, stride, pad=pad)
    with pytest.raises(LoweringError, match=r"AVG_POOL2D \(net.py:9 node pool\).*beyond int32"):
        bound_accumulators(g)
