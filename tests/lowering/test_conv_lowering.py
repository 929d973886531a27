"""The convolution family through tabula.quantize + tabula.lower (the integer reference) against
PyTorch: padding="same" split as PyTorch splits it (odd and even kernels, dilation), depthwise and
grouped convs, Conv1d and the 1-D pools in the right element order, BatchNorm folded or standalone
(int8 and a16w8), and every case tabula cannot take listed before calibration."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

import tabula
from fixtures.conv_family_model import randomize_batch_norms
from tabula.errors import UnsupportedOpError

SCHEMES = ["int8", "a16w8"]


def _program(model, shape, scheme="int8", n=24, seed=0):
    torch.manual_seed(seed)
    x = torch.randn(n, *shape)
    gm = tabula.quantize(model.eval(), (x[:1],), x, scheme=scheme)
    return tabula.lower(gm, (x[:1],)), x


def _sqnr(program, model, x) -> float:
    want = torch.cat([model(x[i : i + 1]) for i in range(len(x))]).detach().numpy()
    got = program.run(x)[0]
    return float(10 * np.log10((want**2).sum() / ((got - want) ** 2).sum()))


def _ops(program) -> list[str]:
    return [o.op for o in program.graph.ops]


def _conv_attrs(program, op="CONV2D") -> list[dict]:
    return [o.attrs for o in program.graph.ops if o.op == op]


class _Wrap(nn.Module):
    def __init__(self, body, post=None):
        super().__init__()
        self.body = body
        self.post = post

    def forward(self, x):
        y = self.body(x)
        return self.post(y) if self.post is not None else y


# -- padding="same", dilation ------------------------------------------------------------------------
@pytest.mark.parametrize("kernel, dilation", [(3, 1), (4, 1), (2, 3), (5, 2), ((2, 3), (1, 2)), ((4, 1), (3, 1))],
                         ids=["k3", "k4_even", "k2_d3", "k5_d2", "k2x3_d1x2", "k4x1_d3x1"])
def test_padding_same_splits_as_pytorch(kernel, dilation):
    conv = nn.Conv2d(3, 5, kernel, padding="same", dilation=dilation)
    p, x = _program(conv, (3, 9, 8), "a16w8")
    ((pad,),) = [[a["pad"]] for a in _conv_attrs(p)]
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    dy, dx = (dilation, dilation) if isinstance(dilation, int) else dilation
    th, tw = dy * (kh - 1), dx * (kw - 1)
    assert pad == [th // 2, th - th // 2, tw // 2, tw - tw // 2]  # the odd one at the bottom / right
    assert _sqnr(p, conv, x[:8]) > 40  # a pad off by one row or column is far below this


def test_padding_valid_and_strided_dilated_conv():
    conv = nn.Conv2d(4, 6, 3, stride=2, dilation=2, padding="valid")
    p, x = _program(conv, (4, 11, 10))
    assert _conv_attrs(p)[0]["pad"] == [0, 0, 0, 0] and _conv_attrs(p)[0]["dilation"] == [2, 2]
    assert _sqnr(p, conv, x[:8]) > 35


# -- depthwise and grouped ---------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("cin, cout, groups, op", [(8, 8, 8, "DEPTHWISE_CONV2D"), (5, 15, 5, "DEPTHWISE_CONV2D"),
                                                   (6, 9, 3, "CONV2D"), (8, 4, 2, "CONV2D")],
                         ids=["depthwise", "depthwise_m3", "grouped_3", "grouped_2"])
def test_depthwise_and_grouped_conv2d(scheme, cin, cout, groups, op):
    conv = nn.Conv2d(cin, cout, 3, padding=1, groups=groups)
    p, x = _program(conv, (cin, 7, 6), scheme)
    ops = _ops(p)
    assert ops.count(op) == (1 if op == "DEPTHWISE_CONV2D" else groups)
    if op == "CONV2D":  # one SLICE + CONV2D + RESCALE per group, one CONCAT
        assert ops.count("SLICE") == groups and ops.count("CONCAT") == 1
    else:
        w = p.graph.constants[p.graph.ops[0].inputs[1]]
        assert w.shape == (3, 3, cin, cout // cin)  # TOSA's [KH, KW, C, M]
    assert _sqnr(p, conv, x[:8]) > (35 if scheme == "int8" else 45)


# -- Conv1d and the 1-D pools -----------------------------------------------------------------------
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    "conv",
    [lambda: nn.Conv1d(4, 6, 3), lambda: nn.Conv1d(4, 6, 4, padding="same", dilation=2),
     lambda: nn.Conv1d(6, 6, 5, stride=2, padding=2, groups=6), lambda: nn.Conv1d(3, 6, 4, padding="same", groups=3),
     lambda: nn.Conv1d(6, 4, 3, padding=1, groups=2), lambda: nn.Conv1d(1, 5, 3, padding=1)],
    ids=["plain", "same_even_dilated", "depthwise_strided", "depthwise_m2_same", "grouped", "cin1"],
)
def test_conv1d_against_pytorch(scheme, conv):
    conv = conv()
    cin = conv.in_channels
    p, x = _program(conv, (cin, 17), scheme)
    ops = _ops(p)
    assert ("DEPTHWISE_CONV2D" in ops) == (conv.groups == cin > 1)
    # [N, C, L] -> [N, 1, L, C]: the window runs along W with kernel [1, K]
    (a,) = [o.attrs for o in p.graph.ops if o.op in ("CONV2D", "DEPTHWISE_CONV2D")][:1]
    assert a["stride"][0] == 1 and a["dilation"][0] == 1 and a["pad"][:2] == [0, 0]
    assert _sqnr(p, conv, x[:8]) > (35 if scheme == "int8" else 45)


def _grid_values(program, x) -> np.ndarray:
    """The model input as the program sees it: quantized with its qparams, dequantized (float64)."""
    (q,) = program.quantize_inputs(x)
    s, zp, _ = program.input_qparams[0]
    return (q.astype(np.float64) - zp) * s


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), (4, 1, 2), (5, 3, 2)])
def test_max_pool1d_is_exact(scheme, kernel, stride, padding):
    pool = _Wrap(lambda t: F.max_pool1d(t, kernel, stride, padding))
    p, x = _program(pool, (5, 19), scheme)
    assert "TRANSPOSE" not in _ops(p)  # [N, C, L] is the NHWC view [N, C, L, 1]: no data moves
    for i in range(4):
        xi = x[i : i + 1]
        want = F.max_pool1d(torch.from_numpy(_grid_values(p, xi)), kernel, stride, padding).numpy()
        np.testing.assert_allclose(p.run(xi)[0], want, rtol=0, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kernel, stride, padding, include", [(2, None, 0, True), (3, 2, 1, True), (3, 2, 1, False),
                                                              (4, 1, 2, True), (5, 3, 2, False)])
def test_avg_pool1d_within_one_lsb(scheme, kernel, stride, padding, include):
    pool = _Wrap(lambda t: F.avg_pool1d(t, kernel, stride, padding, count_include_pad=include))
    p, x = _program(pool, (5, 19), scheme)
    assert ("PAD" in _ops(p)) == (include and padding > 0)  # PyTorch divides by the whole window
    s = p.output_qparams[0].scale
    for i in range(4):
        xi = x[i : i + 1]
        want = F.avg_pool1d(torch.from_numpy(_grid_values(p, xi)), kernel, stride, padding, count_include_pad=include)
        err = np.abs(p.run(xi)[0] - want.numpy()) / s
        assert err.max() <= 0.5 + 1e-3  # TOSA's rounding: at most half an LSB from the exact mean


def test_avg_pool2d_count_include_pad_is_supported():
    pool = _Wrap(lambda t: F.avg_pool2d(t, 3, 2, 1))  # count_include_pad=True (PyTorch's default)
    p, x = _program(pool, (3, 9, 8))
    assert _ops(p) == ["PAD", "AVG_POOL2D"]
    xg = torch.from_numpy(_grid_values(p, x[:1])).permute(0, 3, 1, 2)  # the device's NHWC back to NCHW
    want = F.avg_pool2d(xg, 3, 2, 1).numpy()
    assert np.abs(p.run(x[:1])[0] - want).max() / p.output_qparams[0].scale <= 0.5 + 1e-3


# -- BatchNorm ---------------------------------------------------------------------------------------
class _ConvBN(nn.Module):
    def __init__(self, bias=True, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1, bias=bias, groups=groups)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class _LinearBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 7)
        self.bn = nn.BatchNorm1d(7)

    def forward(self, x):
        return self.bn(self.fc(x))


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("make", [lambda: _ConvBN(), lambda: _ConvBN(bias=False), lambda: _ConvBN(groups=4), lambda: _LinearBN()],
                         ids=["conv_bn", "conv_nobias_bn", "depthwise_bn", "linear_bn1d"])
def test_batch_norm_folds_like_a_hand_folded_model(scheme, make):
    torch.manual_seed(0)
    m = randomize_batch_norms(make().eval())
    before = {k: v.clone() for k, v in m.state_dict().items()}
    hand = make().eval()
    hand.load_state_dict(m.state_dict())
    if isinstance(m, _LinearBN):
        hand.fc, hand.bn, shape = fuse_linear_bn_eval(hand.fc, hand.bn), nn.Identity(), (12,)
    else:
        hand.conv, hand.bn, shape = fuse_conv_bn_eval(hand.conv, hand.bn), nn.Identity(), (4, 6, 5)
    p, x = _program(m, shape, scheme)
    ph, _ = _program(hand, shape, scheme)
    assert _ops(p) == _ops(ph)  # no op left for the BatchNorm
    s, sh = _sqnr(p, m, x), _sqnr(ph, hand, x)
    assert s > (30 if scheme == "int8" else 45) and abs(s - sh) < 0.5, (s, sh)
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in before.items())  # the user's model is untouched


class _ConvCloneBN(_ConvBN):
    """conv -> clone -> BatchNorm -> relu: the identity is removed before the BatchNorm pass looks."""

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x).clone()))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_identity_between_conv_and_batch_norm_does_not_stop_the_fold(scheme):
    torch.manual_seed(0)
    m = randomize_batch_norms(_ConvCloneBN().eval())
    plain = _ConvBN().eval()
    plain.load_state_dict(m.state_dict())
    p, _ = _program(m, (4, 6, 5), scheme)
    assert "DEPTHWISE_CONV2D" not in _ops(p) and _ops(p) == _ops(_program(plain, (4, 6, 5), scheme)[0])


class _BNFirst(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.bn = nn.BatchNorm2d(shape[0]) if len(shape) == 3 else nn.BatchNorm1d(shape[0])

    def forward(self, x):
        return self.bn(x)


class _PoolBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)

    def forward(self, x):
        return self.bn(F.max_pool2d(torch.relu(self.conv(x)), 2))


class _AddBN(nn.Module):
    """A conv whose output feeds the BatchNorm and an add: folding would change the add's input."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


class _SharedConvBN(nn.Module):
    """One conv (shared weights) called twice, each call with its own BatchNorm."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(3), nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn2(self.conv(self.bn1(self.conv(x))))


def _depthwise_equivalent(bn: nn.modules.batchnorm._BatchNorm) -> nn.Module:
    """The float depthwise conv computing ``bn`` by hand: weight gamma / sqrt(var + eps), bias beta - mean * weight."""
    a = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    c = a.numel()
    conv = nn.Conv2d(c, c, 1, groups=c) if isinstance(bn, nn.BatchNorm2d) else nn.Conv1d(c, c, 1, groups=c)
    with torch.no_grad():
        conv.weight.copy_(a.reshape(conv.weight.shape))
        conv.bias.copy_(bn.bias - bn.running_mean * a)
    return conv


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("shape", [(6, 5, 4), (6, 9), (6,)], ids=["bn2d", "bn1d_ncl", "bn1d_nc"])
def test_batch_norm_alone_is_a_1x1_depthwise_conv(scheme, shape):
    m = randomize_batch_norms(_BNFirst(shape).eval())
    p, x = _program(m, shape, scheme)
    dws = [o for o in p.graph.ops if o.op == "DEPTHWISE_CONV2D"]
    assert len(dws) == 1 and p.graph.tensors[dws[0].inputs[1]].shape[:2] == (1, 1)
    assert all(op in ("DEPTHWISE_CONV2D", "RESCALE", "RESHAPE", "TRANSPOSE") for op in _ops(p))
    s = _sqnr(p, m, x)
    if len(shape) == 3:  # the same op written by hand: the same program
        hand = _depthwise_equivalent(m.bn).eval()
        ph, _ = _program(hand, shape, scheme)
        assert abs(s - _sqnr(ph, hand, x)) < 0.5
    assert s > (35 if scheme == "int8" else 55)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("make", [_PoolBN, _AddBN, _SharedConvBN], ids=["after_pool", "conv_with_two_users", "shared_conv"])
def test_batch_norm_that_cannot_fold_is_its_own_op(scheme, make):
    torch.manual_seed(0)
    m = randomize_batch_norms(make().eval())
    p, x = _program(m, (3, 8, 6), scheme)
    assert _ops(p).count("DEPTHWISE_CONV2D") == (2 if make is _SharedConvBN else 1)
    assert _sqnr(p, m, x) > (30 if scheme == "int8" else 45)


def test_torchao_finds_no_batch_norm_left():
    """torchao's own conv+BN fusion would fold into a conv that has other users (and drop the second
    BatchNorm of a shared conv); tabula rewrites every BatchNorm before prepare_pt2e."""
    from tabula.fx import canonical_op
    from tabula.quantizer import capture
    from tabula.quantizer.batch_norm import BATCH_NORM_OPS, fold_batch_norms

    for make in (_AddBN, _SharedConvBN, lambda: _ConvBN()):
        m = randomize_batch_norms(make().eval())
        x = torch.randn(2, 3 if make in (_AddBN, _SharedConvBN) else 4, 8, 6)
        gm = capture(m, (x[:1],))
        assert fold_batch_norms(gm) >= 1
        assert not any(n.op == "call_function" and canonical_op(n.target) in BATCH_NORM_OPS for n in gm.graph.nodes)
        torch.testing.assert_close(gm(x[:1]), m(x[:1]), rtol=1e-5, atol=1e-5)


def test_decomposed_batch_norm_is_rewritten_too():
    """A program run through run_decompositions carries _native_batch_norm_legit_no_training + getitem."""
    m = randomize_batch_norms(_BNFirst((3, 8, 6)).eval())
    x = torch.randn(16, 3, 8, 6)
    ep = torch.export.export(m, (x[:1],)).run_decompositions()
    assert any("_native_batch_norm_legit_no_training" in str(n.target) for n in ep.graph.nodes)
    gm = tabula.quantize(ep, (x[:1],), x)
    p = tabula.lower(gm, (x[:1],))
    assert "DEPTHWISE_CONV2D" in _ops(p) and _sqnr(p, m, x[:8]) > 35


# -- what tabula cannot take: listed before calibration ----------------------------------------------
class _ExplodingCalibration:
    def __iter__(self):
        raise AssertionError("calibration ran before the unsupported-op check")


class _Limits(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4, track_running_stats=False)

    def forward(self, x):
        a = F.max_pool1d(x, 2, ceil_mode=True)
        b = F.max_pool1d(x, 2, dilation=2)
        c = F.avg_pool1d(x, 3, ceil_mode=True)
        return a.sum() + b.sum() + c.sum() + self.bn(x).sum()


def test_limits_are_listed_before_calibration():
    x = torch.randn(1, 4, 10)
    with pytest.raises(UnsupportedOpError) as ei:
        tabula.quantize(_Limits().eval(), (x,), _ExplodingCalibration())
    ops = [n for n, _ in ei.value.ops]
    assert "aten.max_pool1d with ceil_mode=True" in ops
    assert "aten.max_pool1d with dilation > 1 (TOSA pooling has none)" in ops
    assert "aten.avg_pool1d with ceil_mode=True" in ops
    assert any(o.startswith("aten.batch_norm without running statistics") for o in ops)
    assert all("test_conv_lowering.py:" in src for _, src in ei.value.ops)
    assert "aten.batch_norm" in ei.value.supported  # counted as supported
    assert f"tabula supports {len(ei.value.supported)} aten ops" in str(ei.value)


def test_training_mode_batch_norm_is_listed():
    m = _BNFirst((3, 4, 4)).train()
    ep = torch.export.export(m, (torch.randn(2, 3, 4, 4),))
    with pytest.raises(UnsupportedOpError, match="in training mode"):
        tabula.quantize(ep, (torch.randn(1, 3, 4, 4),), _ExplodingCalibration())
