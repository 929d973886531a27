"""Lowering: the integer program follows the PT2E converted graph; IR save/load; contracts."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import tabula
from tabula.ir import IRError, verify
from tabula.qmath import build_table_int8, dequantize, quantize_round_half_even


def test_digits_program_matches_the_pt2e_graph(digits_quantized, digits_program):
    gm, _, x, _ = digits_quantized
    scale = digits_program.output_qparams[0].scale
    diffs = []
    for i in range(120):
        xi = torch.from_numpy(x[i : i + 1])
        diffs.append(np.abs(gm(xi).detach().numpy() - digits_program.run(xi)[0]).max() / scale)
    diffs = np.array(diffs)
    # at most one output LSB (a rounding tie; the PT2E graph keeps the bias in float), measured on
    # float32 outputs of up to 255 LSB, whose own rounding is 255 * 2^-24 relative ~ 2e-5 LSB
    assert diffs.max() <= 1.0 + 1e-4
    assert (diffs < 1e-6).mean() >= 0.95


def test_digits_program_ops_and_qparams(digits_program):
    ops = [o.op for o in digits_program.graph.ops]
    assert ops.count("TABLE") == 2 and ops.count("CONV2D") == 2 and "FULLY_CONNECTED" in ops
    (s, zp, dt), = digits_program.input_qparams
    assert dt == "int8" and 0 < s < 0.01  # pixels in [0, 1]
    assert -128 <= zp <= -120


def test_tables_equal_pytorch_q_f_dq_for_every_code(digits_program):
    g = digits_program.graph
    fns = {"silu": torch.nn.functional.silu, "tanh": torch.tanh}
    for op in g.ops:
        if op.op != "TABLE":
            continue
        x, t = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
        f = fns[op.outputs[0].split("_")[0]]
        codes = torch.arange(-128, 128, dtype=torch.int8)
        qd = torch.ops.quantized_decomposed
        expect = qd.quantize_per_tensor(
            f(qd.dequantize_per_tensor(codes, x.scale, x.zero_point, -128, 127, torch.int8)),
            t.scale, t.zero_point, -128, 127, torch.int8,
        ).numpy()
        np.testing.assert_array_equal(g.constants[op.inputs[1]], expect)


def test_build_table_rejects_out_of_domain_grids():
    from tabula.qmath import QuantizationError

    with pytest.raises(QuantizationError, match="NaN"):
        build_table_int8(lambda v: np.arcsin(v), 0.01, 0, 0.02, 0)  # codes reach +-1.28


def test_save_load_roundtrip_runs_identically(digits_program, digits_quantized, tmp_path):
    _, _, x, _ = digits_quantized
    digits_program.save(tmp_path / "prog")
    loaded = tabula.load(tmp_path / "prog")
    xi = digits_program.quantize_inputs(x[:1])
    for a, b in zip(digits_program.run_int(*xi), loaded.run_int(*xi)):
        np.testing.assert_array_equal(a, b)
    assert loaded.input_qparams == digits_program.input_qparams


def test_load_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="ir.json"):
        tabula.load(tmp_path)


def test_verify_names_the_broken_op(digits_program):
    g = copy.deepcopy(digits_program.graph)
    table_op = next(o for o in g.ops if o.op == "TABLE")
    g.tensors[table_op.inputs[1]].shape = (255,)
    with pytest.raises(IRError, match="TABLE .*256"):
        verify(g)


def test_run_rejects_wrong_input_shape(digits_program):
    with pytest.raises(ValueError, match="shape"):
        digits_program.run(np.zeros((1, 1, 7, 8), np.float32))


def test_quantize_dequantize_twins_match_torch():
    qd = torch.ops.quantized_decomposed
    rng = np.random.default_rng(3)
    for _ in range(20):
        s, zp = float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 128))
        v = (rng.standard_normal(4096) * 80 * s).astype(np.float32)
        v[:3] = np.array([0.5, 1.5, -2.5], np.float32) * np.float32(s)  # near ties
        ours = quantize_round_half_even(v, s, zp, "int8")
        theirs = qd.quantize_per_tensor(torch.from_numpy(v), s, zp, -128, 127, torch.int8).numpy()
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(
            dequantize(ours, s, zp), qd.dequantize_per_tensor(torch.from_numpy(ours), s, zp, -128, 127, torch.int8).numpy()
        )
