"""Mask logic (rules.MASK; lowering/ops/logical.py, reduce_any.py): and / or / xor / not of boolean masks as
BITWISE_AND / OR / XOR on the IR's int8 0 / 1 (not: XOR 1), True / False operands folded, any as REDUCE_MAX over
a dim, dims or every element.  The masks come from comparisons of int8 and int16 (a16w8) codes with numbers and of
two activations on one grid.

* Python == PT2E's simulation of the quantized graph, every mask exactly, on every input code (int8: 256, int16:
  65,536) laid out in order (so rows of ``any`` are all False, all True, or cross at the threshold code) and on
  random codes; == PyTorch's own ops on the dequantized input.
* C == Python bit for bit: the lowered graph through the C kernels (host library, and one graph on the emulated
  Cortex-M55), and the generated firmware on the host board (a 4-D model: NHWC masks, any over C and over H, W).
* What is not a boolean mask is refused up front, by name.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

import tabula
from helpers import scons
from tabula import kernels
from tabula.errors import UnsupportedOpError
from tabula.tosa import kernel_calls


class Masks(nn.Module):
    """Every mask op, on the masks of comparisons with numbers (a, b, c) and of two activations (d: the first half
    of the rows against the second); a bool buffer broadcast over the rows."""

    def __init__(self):
        super().__init__()
        self.register_buffer("keep", torch.arange(32) % 3 != 0)

    def forward(self, x):  # [1, R, 32]
        a, b, c = x > 0.3, x < -0.3, x >= 0.0
        h = x.shape[1] // 2
        d = x[:, :h] > x[:, h:]
        return (a & b, a | b, a ^ c, ~a, torch.bitwise_and(a, c), torch.bitwise_or(b, c), torch.bitwise_xor(a, b),
                torch.bitwise_not(c), torch.logical_and(a, c), torch.logical_or(a, b), torch.logical_xor(b, c),
                torch.logical_not(b), a & True, a & False, a | True, a | False, a ^ True, a ^ False, c & self.keep,
                d ^ (x[:, h:] > 0.3), a.any(), a.any(-1), b.any(-1, keepdim=True), c.any((1, 2)), a.any(1), a.any(dim=()),
                (a | b).any(-1))


MIN_OPS = {"BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "REDUCE_MAX", "GREATER", "GREATER_EQUAL"}


def _program(scheme, seed=0):
    torch.manual_seed(seed)
    calib = torch.randn(8, 16, 32)
    gm = tabula.quantize(Masks().eval(), (calib[:1],), calib, scheme=scheme)
    return gm, tabula.lower(gm)


def _inputs(program, scheme, rng):
    """Float inputs [1, 16, 32] on the input grid: every code in order (int16: in 128 pieces of 512), then
    random codes."""
    q = program.input_qparams[0]
    lo, hi = (-128, 127) if scheme == "int8" else (-32768, 32767)
    codes = np.arange(lo, hi + 1)
    pieces = [np.resize(p, 512) for p in np.array_split(codes, max(1, len(codes) // 512))]
    pieces += [rng.integers(lo, hi, 512, endpoint=True) for _ in range(4)]
    return [((p - q.zero_point) * np.float32(q.scale)).astype(np.float32).reshape(1, 16, 32) for p in pieces]


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_every_mask_op_equals_pt2e_simulation_and_pytorch_on_every_code(scheme, rng):
    gm, program = _program(scheme)
    model = Masks().eval()
    assert all(program.graph.tensors[n].dtype == "int8" for n in program.graph.outputs)
    for x in _inputs(program, scheme, rng):
        with torch.no_grad():
            sims = gm(torch.from_numpy(x))
            floats = model(torch.from_numpy(x))  # x is on the grid: dq(q(x)) == x
        got = program.run(x)
        assert len(got) == len(sims) == 27
        for k, (g, s, f) in enumerate(zip(got, sims, floats)):
            assert s.dtype == torch.bool and g.size == max(1, s.numel()), k
            np.testing.assert_array_equal(g.reshape(s.shape), s.numpy().astype(np.float32), err_msg=f"output {k}")
            np.testing.assert_array_equal(s, f)
    ops = {o.op for o in program.graph.ops}
    assert MIN_OPS <= ops and "SELECT" not in ops and "TABLE" not in ops


def test_the_ops_each_mask_op_lowers_to():
    """and / or / xor one BITWISE op of two masks, not an XOR with 1, the number operands folded (a RESHAPE
    keeps the mask), any one REDUCE_MAX per reduced dim (none for ``dim=()``)."""
    _, program = _program("int8")
    g = program.graph
    writer = {t: o for o in g.ops for t in o.outputs}

    def kind(name):
        o = writer[name]
        return o.op, [g.constants[i].reshape(-1).tolist() if i in g.constants else None for i in o.inputs[1:]]

    def reductions(name):
        n, o = 0, writer[name]
        while o is not None and o.op in ("RESHAPE", "TRANSPOSE", "REDUCE_MAX"):
            n += o.op == "REDUCE_MAX"
            o = writer.get(o.inputs[0])
        return n

    kinds = [kind(n) for n in g.outputs]
    assert kinds[:4] == [("BITWISE_AND", [None]), ("BITWISE_OR", [None]), ("BITWISE_XOR", [None]),
                         ("BITWISE_XOR", [[1]])]
    # a & True, a & False, a | True, a | False, a ^ True, a ^ False
    assert kinds[12:18] == [("RESHAPE", []), ("BITWISE_AND", [[0]]), ("BITWISE_OR", [[1]]), ("RESHAPE", []),
                            ("BITWISE_XOR", [[1]]), ("RESHAPE", [])]
    # any(), any(-1), any(-1, keepdim), any((1, 2)), any(1), any(dim=()), (a | b).any(-1)
    assert [reductions(n) for n in g.outputs[20:]] == [3, 1, 1, 2, 1, 0, 1]


def _codes(program, x):
    return program.quantize_inputs(x)


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_c_kernels_equal_the_reference_on_the_mask_graph(scheme, kernel_lib, rng):
    """Every IR op of the lowered graph through the host C kernels == the Python reference, on the pieces of
    every code and random codes."""
    _, program = _program(scheme)
    g = program.graph
    assert kernel_calls.unsupported(g, set(kernels.names())) is None
    xs = _inputs(program, scheme, rng)
    for x in xs[:: max(1, len(xs) // 12)] + xs[-4:]:
        ins = _codes(program, x)
        for k, (a, b) in enumerate(zip(kernel_calls.run_graph(kernel_lib, g, ins), program.run_int(*ins))):
            assert a.dtype == b.dtype == np.int8
            np.testing.assert_array_equal(a.reshape(b.shape), b, err_msg=f"output {k}")


class Masks4d(nn.Module):
    """NCHW masks (NHWC in the IR): and / not / xor of comparisons, any over C, over H and W, and into where."""

    def forward(self, x):  # [1, 4, 3, 5]
        a, b = x > 0.2, x < -0.5
        m = ~a & (x < 0.5) | b
        return m, (a ^ b).any(1), torch.logical_not(b).any((2, 3), keepdim=True), torch.where(m, x, 0.0)


@pytest.mark.host
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_4d_masks_firmware_bit_exact_on_host(scheme, tmp_path):
    """The generated firmware (SCons, board=host) == the Python reference; the references' masks == PyTorch's."""
    torch.manual_seed(5)
    x = torch.randn(24, 4, 3, 5)
    torch.export.save(torch.export.export(Masks4d().eval(), (x[:1],)), tmp_path / "m.pt2")
    np.savez(tmp_path / "calib.npz", x=x[:16].numpy())
    np.savez(tmp_path / "test.npz", x=x[16:].numpy())
    scons("board=host", f"scheme={scheme}", f"build_dir={tmp_path / 'b'}", f"model={tmp_path / 'm.pt2'}",
          f"calib={tmp_path / 'calib.npz'}", f"data={tmp_path / 'test.npz'}", "name=masks")
    out = tmp_path / "b" / "host" / ("masks" if scheme == "int8" else f"masks-{scheme}")
    r = json.loads((out / "results.json").read_text())
    assert r["n_outputs_received"] == 8 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert [o["shape"] for o in r["outputs"]] == [[4, 3, 5], [3, 5], [4, 1, 1], [4, 3, 5]]
    assert r["output_elements"] == 8 * (60 + 15 + 4 + 60)
    ops = {o["op"] for o in json.loads((out / "ir.json").read_text())["ops"]}
    assert {"BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "REDUCE_MAX", "SELECT"} <= ops


@pytest.mark.arm
@pytest.mark.qemu
def test_c_kernels_on_the_m55_equal_the_reference(device_lib, rng):
    """One a16w8 mask graph (int16 codes into the comparisons) through the kernels on the emulated Cortex-M55."""
    torch.manual_seed(6)
    x = torch.randn(8, 4, 3, 5)
    gm = tabula.quantize(Masks4d().eval(), (x[:1],), x, scheme="a16w8")
    program = tabula.lower(gm)
    ins = program.quantize_inputs(x[:1].numpy())
    got = kernel_calls.run_graph(device_lib("m55"), program.graph, ins)
    for a, b in zip(got, program.run_int(*ins)):
        np.testing.assert_array_equal(a.reshape(b.shape), b)
    with torch.no_grad():
        sims = gm(x[:1])
    for a, s in zip(program.dequantize_outputs(got)[:3], sims[:3]):  # NHWC -> NCHW
        np.testing.assert_array_equal(a.reshape(s.shape), s.numpy().astype(np.float32))


class _Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


@pytest.mark.parametrize("fn, named", [
    (lambda x: torch.logical_and(x, x > 0), "aten.logical_and of float tensors"),
    (lambda x: torch.logical_not(x), "aten.logical_not of float tensors"),
    (lambda x: x.any(-1), "aten.any of float tensors"),
    (lambda x: ((x > 0) & 1).float() + x, "aten.__and__ with the number 1"),
    (lambda x: x.argmax(-1) & 1, "aten.__and__ of integer tensors"),
])
def test_what_is_not_a_boolean_mask_is_refused_up_front_by_name(fn, named):
    x = torch.randn(4, 2, 8)
    with pytest.raises(UnsupportedOpError, match=named):
        tabula.quantize(_Fn(fn).eval(), (x[:1],), x)


class Gate(nn.Module):
    """Masks of two activations and of numbers combined into where / masked_fill, a row mask from any."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):  # [1, 4, 8]
        a, b = self.a(x), self.b(x)
        m = (a > 0.5) & (b < 0.0) | ~(a > b)
        rows = torch.logical_xor(a > 1.0, b > 1.0).any(-1, keepdim=True)
        return torch.where(m, a, b), a.masked_fill(rows, 0.0), torch.where(torch.logical_not(m) ^ True, b, 0.25), m


@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_masks_into_where_match_pt2e_simulation(scheme):
    """where / masked_fill select under the combined masks: the mask equals PT2E's simulation exactly, the selected
    values within the linears' own rounding (tests/models/test_long_tail_ops.py's bound)."""
    torch.manual_seed(8)
    model, x = Gate().eval(), torch.randn(24, 4, 8)
    gm = tabula.quantize(model, (x[:1],), x[:16], scheme=scheme)
    program = tabula.lower(gm)
    for t in x[16:]:
        with torch.no_grad():
            sims = [s.numpy() for s in gm(t[None])]
        got = program.run(t[None].numpy())
        np.testing.assert_array_equal(got[3].reshape(sims[3].shape), sims[3].astype(np.float32))  # the mask
        for g, sim, q in zip(got[:3], sims[:3], program.output_qparams):
            # the linears' codes: within 1 LSB int8 (a RESCALE rounds ties half up), a few LSB a16w8
            assert np.abs(g - sim).max() / q.scale <= (1.0 + 1e-3 if scheme == "int8" else 4.0)
    ops = [o.op for o in program.graph.ops]
    assert ops.count("SELECT") == 3 and {"BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "REDUCE_MAX"} <= set(ops)


@pytest.mark.tosa
@pytest.mark.parametrize("scheme", ["int8", "a16w8"])
def test_the_tosa_export_on_the_tosa_reference_model_equals_the_reference(scheme, rng):
    """The masks' BITWISE_* / REDUCE_MAX on int8 are valid TOSA 1.0: the official reference model runs the
    exported graph to the Python reference's codes."""
    from tabula import tosa as T

    torch.manual_seed(9)
    x = torch.randn(16, 4, 8)
    program = tabula.lower(tabula.quantize(Gate().eval(), (x[:1],), x, scheme=scheme))
    for t in x[:3]:
        ins = program.quantize_inputs(t[None].numpy())
        for got, want in zip(T.run_graph(program.graph, ins), program.run_int(*ins)):
            np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want)
