"""NPU plans with the real Vela (5.2.0, pinned): what runs where and Vela's figures for digits, the a16w8
attention (its int16 MATMUL on the CPU between two NPU segments), the MobileNet example (every op on the
NPU) and the Ethos-U65's memory mode; a refusal Vela makes that the table did not predict goes to the CPU;
``tabula npu`` prints the plan and writes the same files twice."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tabula
from tabula.npu import compile_npu, legalize
from tabula.npu.partition import CPU, NPU

pytestmark = [pytest.mark.vela, pytest.mark.tosa]


def _plan(npu_model, name, scheme, tmp_path, target="ethos-u55-128"):
    program, _ = npu_model(name, scheme)
    g, _ = legalize(program.graph, target)
    return g, compile_npu(g, target, "corstone300", tmp_path / f"{name}-{scheme}")


def test_digits_runs_whole_on_the_u55(npu_model, tmp_path):
    g, plan = _plan(npu_model, "digits", "int8", tmp_path)
    t = plan["totals"]
    assert (t["segments"], t["npu_ops"], t["cpu_ops"]) == (1, len(g.ops), 0)
    assert t["cycles"] == 4052 and t["macs"] == 24448 and round(t["time_s"] * 1e6, 1) == 8.1  # at 500 MHz
    (seg,) = plan["segments"]
    cmd = (tmp_path / "digits-int8" / seg["files"]["cmd"]).read_bytes()
    assert cmd[:4] == b"COP1" and len(cmd) == seg["cmd_bytes"]
    assert seg["inputs"] == [{"name": g.inputs[0], "bytes": 64, "region": 1, "offset": seg["inputs"][0]["offset"]}]
    for io in seg["inputs"] + seg["outputs"]:  # every input and output inside the scratch Vela sized
        assert io["region"] == 1 and io["offset"] + io["bytes"] <= seg["scratch_bytes"]
    assert plan["regions"] == {"weights": "ddr", "scratch": "sram", "fast_scratch": "sram"}
    assert sum(layer["cycles"] for layer in seg["layers"]) > 0 and {layer["op"] for layer in seg["layers"]} >= {"Conv2D", "MaxPool"}


def test_a16w8_attention_puts_its_int16_matmul_on_the_cpu_between_two_npu_segments(npu_model, tmp_path):
    g, plan = _plan(npu_model, "attention", "a16w8", tmp_path)
    cpu = [(o["op"], o["reason"]) for o in plan["ops"] if o["engine"] == CPU]
    assert [op for op, _ in cpu] == ["MATMUL", "RESCALE"]
    assert "MATMUL int16 -> int48 (takes int8 -> int32)" in cpu[0][1] and "int48 accumulator" in cpu[1][1]
    assert [s["engine"] for s in plan["segments"]] == [NPU, CPU, NPU]
    assert all(s["cycles"] > 0 for s in plan["segments"] if s["engine"] == NPU)
    g8, plan8 = _plan(npu_model, "attention", "int8", tmp_path)
    assert plan8["totals"]["cpu_ops"] == 0  # the int8 MATMUL runs on the NPU


def test_mobilenet_runs_whole_on_the_u55(npu_model, tmp_path):
    g, plan = _plan(npu_model, "mobilenet", "int8", tmp_path)
    t = plan["totals"]
    assert (t["npu_segments"], t["cpu_ops"], t["npu_ops"]) == (1, 0, len(g.ops)) and len(g.ops) > 80
    assert 6e6 < t["macs"] < 8e6 and t["cycles"] > 1e5 and t["flash_bytes"] > 2e5
    assert [s["form"] for s in plan["softmax"]] == ["npu"]


def test_the_u65_keeps_its_scratch_in_dram_and_its_fast_scratch_in_sram(npu_model, tmp_path):
    g, plan = _plan(npu_model, "digits", "int8", tmp_path, target="ethos-u65-256")
    assert (plan["memory_mode"], plan["macs"]) == ("Dedicated_Sram", 256)
    assert plan["regions"] == {"weights": "ddr", "scratch": "ddr", "fast_scratch": "sram"}
    assert plan["totals"]["fast_scratch_bytes"] > 0


def test_an_op_vela_refuses_beyond_the_table_is_moved_to_the_cpu(npu_model, tmp_path, monkeypatch):
    """The CPU form of the softmax with the table told that REDUCE_MAX int32 runs: Vela refuses it, the loop
    finds it and puts it on the CPU with Vela's message; INTDIV stays on the CPU by the table."""
    from tabula.npu import capabilities

    program, _ = npu_model("softmax_classifier", "int8")
    table = dict(capabilities.TABLES["ethos-u55"])
    table["REDUCE_MAX"] = {}
    monkeypatch.setitem(capabilities.TABLES, "ethos-u55", table)
    plan = compile_npu(program.graph, "ethos-u55-128", "corstone300", tmp_path / "clf")
    cpu = {o["op"]: o["reason"] for o in plan["ops"] if o["engine"] == CPU}
    assert set(cpu) == {"REDUCE_MAX", "INTDIV"}
    assert cpu["REDUCE_MAX"].startswith("Vela 5.2.0 refused it: ") and "ReduceMax" in cpu["REDUCE_MAX"]
    assert plan["vela_compiles"] >= 3 and [s["engine"] for s in plan["segments"]][:3] == [NPU, CPU, NPU]


def test_tabula_npu_prints_the_plan_and_writes_the_same_files_twice(npu_model, tmp_path):
    program, _ = npu_model("digits", "int8")
    program.save(tmp_path / "ir")
    outs = []
    for k in range(2):
        p = subprocess.run([sys.executable, "-m", "tabula.cli", "npu", "--ir", str(tmp_path / "ir"), "--npu", "ethos-u55-128",
                            "--board", "corstone300", "--out", str(tmp_path / f"npu{k}")], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout)
    assert "12 of 12 IR ops on the NPU in 1 segment(s), 0 on the CPU; Vela: 4,052 cycles (8.1 us)" in outs[0]
    for f in ("plan.json", "seg0.cmd.bin", "seg0.weights.bin", "seg0.tosa"):
        assert (tmp_path / "npu0" / f).read_bytes() == (tmp_path / "npu1" / f).read_bytes()
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "npu", "--ir", str(tmp_path / "ir"), "--npu", "ethos-u99",
                        "--board", "corstone300", "--out", str(tmp_path / "bad")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0
    assert "unknown NPU target 'ethos-u99'; choose one of ethos-u55-32" in p.stderr
    assert json.loads((tmp_path / "npu0" / "plan.json").read_text())["target"] == "ethos-u55-128"
    assert np.frombuffer((tmp_path / "npu0" / "seg0.weights.bin").read_bytes(), np.uint8).size == 3136
    assert tabula.load(tmp_path / "ir").graph.ops[0].op == program.graph.ops[0].op
