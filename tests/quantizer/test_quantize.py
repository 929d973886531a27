"""Quantizer rules: in-place parity, own qparams for TABLE ops, shared qparams, unsupported ops."""
from __future__ import annotations

import pytest
import torch
from torch import nn

import tabula
from tabula import rules
from tabula.errors import UnsupportedOpError

_qd = None


def _q_nodes(gm):
    qd = torch.ops.quantized_decomposed
    return [n for n in gm.graph.nodes if n.target == qd.quantize_per_tensor.default]


def _qparams_around(gm, op_name: str):
    """(input qparams, output qparams) of the first node whose canonical op is ``op_name``."""
    qd = torch.ops.quantized_decomposed
    for n in gm.graph.nodes:
        if n.op == "call_function" and rules.canonical_op(n.target) == op_name:
            dq = n.args[0]
            assert dq.target == qd.dequantize_per_tensor.default
            q_out = next(iter(n.users))
            assert q_out.target == qd.quantize_per_tensor.default
            return tuple(dq.args[1:3]), tuple(q_out.args[1:3])
    raise AssertionError(f"{op_name} not in graph")


def test_every_inplace_overload_resolves_to_its_functional_twin():
    checked = 0
    for name in rules.supported_ops():
        ns, op = name.split(".")
        inplace = getattr(getattr(torch.ops, ns), op + "_", None)
        if inplace is None:
            continue
        for overload in inplace.overloads():
            target = getattr(inplace, overload)
            assert rules.canonical_op(target) == name
            assert rules.op_class(target) is rules.op_class(getattr(getattr(torch.ops, ns), op))
            checked += 1
    assert checked >= 5  # silu_, sigmoid_, tanh_, hardswish_, elu_, exp_, ... exist in aten


class _ConvAct(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.act = act
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return torch.flatten(self.pool(self.act(self.conv(x))), 1)


def _quantize(model, seed=0):
    torch.manual_seed(seed)
    calib = torch.randn(32, 1, 6, 6) * 3
    return tabula.quantize(model, (calib[:1],), calib)


def test_silu_and_inplace_silu_get_the_same_own_output_qparams():
    torch.manual_seed(1)
    m1 = _ConvAct(nn.SiLU())
    m2 = _ConvAct(nn.SiLU(inplace=True))
    m2.load_state_dict(m1.state_dict())
    gm1, gm2 = _quantize(m1), _quantize(m2)
    assert any(n.target == torch.ops.aten.silu_.default for n in gm2.graph.nodes), "export kept silu_"
    qin1, qout1 = _qparams_around(gm1, "aten.silu")
    qin2, qout2 = _qparams_around(gm2, "aten.silu")
    assert qin1 == qin2 and qout1 == qout2
    assert qout1 != qin1
    # SiLU >= -0.2785: the own output grid is finer than the input's and still covers the minimum.
    (s_in, _), (s_out, zp_out) = qin1, qout1
    assert s_out < s_in
    assert (-128 - zp_out) * s_out <= -0.27


def test_shared_ops_keep_their_producers_qparams():
    gm = _quantize(_ConvAct(nn.Tanh()))
    qin, qout = _qparams_around(gm, "aten.max_pool2d")
    assert qin == qout
    qin, qout = _qparams_around(gm, "aten.flatten")
    assert qin == qout


class _Unsupported(nn.Module):
    def forward(self, x):
        y = torch.cumprod(x, dim=1)
        return torch.sort(y, dim=1).values


class _ExplodingCalibration:
    def __iter__(self):
        raise AssertionError("calibration ran before the unsupported-op check")


def test_unsupported_ops_are_all_listed_with_source_before_calibration():
    x = torch.randn(1, 5)
    with pytest.raises(UnsupportedOpError) as ei:
        tabula.quantize(_Unsupported(), (x,), _ExplodingCalibration())
    msg = str(ei.value)
    assert "aten.cumprod" in msg and "aten.sort" in msg
    assert "test_quantize.py:" in msg
    assert "aten.conv2d" in ei.value.supported and f"tabula supports {len(ei.value.supported)} aten ops" in msg
    assert {n for n, _ in ei.value.ops} == {"aten.cumprod", "aten.sort"}


class _BeyondTheLowerings(nn.Module):
    """Supported ops used beyond what their lowerings do, and a dtype conversion: each failed after
    calibration (LoweringError) or at the first odd node before."""

    def __init__(self):
        super().__init__()
        self.register_buffer("zeros", torch.zeros(8))

    def forward(self, x):
        a = x / torch.tanh(x)  # div by an activation of either sign
        b = torch.div(x, torch.tanh(x), rounding_mode="floor")  # floor division by a tensor (by a number only)
        c = x / self.zeros  # div by zero
        d = torch.nn.functional.pad(x.view(1, 2, 2, 2), (1, 1, 1, 1), mode="reflect")  # reflect
        d = torch.nn.functional.layer_norm(d, (4,))  # over the W of an NCHW tensor
        return a + b + c + d.reshape(1, -1)[:, :8], x.half()


def test_uses_beyond_the_lowerings_are_listed_with_the_unsupported_ops():
    """The lowerings' limits (each module's ``unsupported(node)``) are reported in the same up-front
    list, before calibration, instead of one LoweringError per failed build after it."""
    x = torch.randn(4, 8)
    with pytest.raises(UnsupportedOpError) as ei:
        tabula.quantize(_BeyondTheLowerings(), (x[:1],), _ExplodingCalibration())
    ops = [n for n, _ in ei.value.ops]
    assert ops == [
        "aten.div by an activation not positive by construction (x / y becomes x * reciprocal(y) when y is an "
        "exp, sigmoid, softplus, sqrt, abs, relu, a clamp with min >= 0, y * y, or a sum / add / mul of those and "
        "constants >= 0: quantizer/rewrite_div_pass.py; the reciprocal's domain is [0, inf))",
        "aten.div by a tensor (by a constant number only)",
        "aten.div by zero",
        "aten.pad with mode='reflect' (only constant padding)",
        "aten.layer_norm on a 4-D input (normalize a [N, T, C] or [N, C] tensor: the last dim of NCHW is not "
        "contiguous on the device)",
        "aten.to (a conversion to torch.float16; tabula runs float32 models)",
    ], ops
    assert all("test_quantize.py:" in src for _, src in ei.value.ops)


def test_nan_weight_is_rejected_with_a_clear_error():
    m = _ConvAct(nn.SiLU())
    with torch.no_grad():
        m.conv.weight[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN or Inf"):
        _quantize(m)


def test_unknown_scheme_is_rejected():
    with pytest.raises(ValueError, match="scheme"):
        tabula.quantize(_ConvAct(nn.SiLU()), (torch.randn(1, 1, 6, 6),), torch.randn(2, 1, 6, 6), scheme="int3")
