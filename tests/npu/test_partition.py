"""The partitioner without Vela: the capability table's rules on single ops, the int48 tie, the cut into
segments and their inputs / outputs, and the compile loop's search for the op a (fake) Vela refuses."""
from __future__ import annotations

import pytest

from tabula.ir import Graph, Op, Tensor
from tabula.npu.capabilities import TABLES, npu_refusal
from tabula.npu.compile import compile_segments
from tabula.npu.partition import CPU, NPU, cut, mark, subgraph, units
from tabula.npu.vela import VelaRefused, VelaResult


def _chain(ops_spec) -> Graph:
    """A graph x -> op -> t1 -> op -> t2 ... from ``[(op, in dtype, out dtype, attrs)]`` (shape [1, 4, 4, 8])."""
    g = Graph()
    shape = (1, 4, 4, 8)
    g.add_tensor(Tensor("t0", shape, ops_spec[0][1], 0.1, 0))
    g.inputs = ["t0"]
    for i, (name, _, dt_out, attrs) in enumerate(ops_spec):
        g.add_tensor(Tensor(f"t{i + 1}", shape, dt_out, 0.1, 0))
        g.add_op(Op(name, [f"t{i}"], [f"t{i + 1}"], attrs, f"src{i}"))
    g.outputs = [f"t{len(ops_spec)}"]
    return g


def test_the_u55_table_refuses_what_vela_documents_and_the_u85_takes_it():
    g = _chain([("REDUCE_MAX", "int32", "int32", {"axis": 3})])
    assert "REDUCE_MAX int32 -> int32 (takes int8 -> int8, int16 -> int16)" in npu_refusal(g, g.ops[0], "ethos-u55")
    assert npu_refusal(g, g.ops[0], "ethos-u85") is None
    g8 = _chain([("REDUCE_MAX", "int8", "int8", {"axis": 3})])
    assert npu_refusal(g8, g8.ops[0], "ethos-u55") is None
    g2 = _chain([("MAX_POOL2D", "int8", "int8", {"kernel": [2, 2], "stride": [4, 4], "pad": [0, 0, 0, 0]})])
    assert "stride 4x4 outside 1..3" in npu_refusal(g2, g2.ops[0], "ethos-u55")
    # a global pool's stride reads nothing twice: kws's 25x5 average pool compiles
    g3 = _chain([("AVG_POOL2D", "int8", "int8", {"kernel": [4, 4], "stride": [4, 4], "pad": [0, 0, 0, 0]})])
    g3.tensors["t1"] = Tensor("t1", (1, 1, 1, 8), "int8", 0.1, 0)
    assert npu_refusal(g3, g3.ops[0], "ethos-u55") is None
    assert TABLES["ethos-u55"]["INTDIV"] is None and TABLES["ethos-u65"] is TABLES["ethos-u55"]


def test_an_int48_accumulator_stays_with_its_producer():
    """MATMUL int16 -> int48 is CPU on the U55; the RESCALE reading its int48 result follows it."""
    g = Graph()
    for n, shape, dt in [("a", (1, 6, 8), "int16"), ("b", (1, 8, 6), "int16"), ("acc", (1, 6, 6), "int48"),
                         ("y", (1, 6, 6), "int16"), ("z", (1, 6, 6), "int16")]:
        g.add_tensor(Tensor(n, shape, dt, 0.1, 0))
    g.inputs, g.outputs = ["a", "b"], ["z"]
    g.add_op(Op("MATMUL", ["a", "b"], ["acc"], {"a_zp": 0, "b_zp": 0}))
    g.add_op(Op("RESCALE", ["acc"], ["y"], {"multiplier": [1 << 14], "shift": [20], "scale32": False}))
    g.add_op(Op("CLAMP", ["y"], ["z"], {"min": 0, "max": 32767}))
    engines, reasons = mark(g, "ethos-u55")
    assert engines == [CPU, CPU, NPU]
    assert "MATMUL int16 -> int48" in reasons[0] and "int48 accumulator with op 0 (MATMUL)" in reasons[1]
    assert units(g, [0, 1, 2]) == [[0, 1], [2]]
    segs = cut(g, engines)
    assert [(s.engine, s.ops, s.inputs, s.outputs) for s in segs] == [(CPU, [0, 1], ["a", "b"], ["y"]),
                                                                      (NPU, [2], ["y"], ["z"])]
    sg = subgraph(g, segs[1].ops)
    assert (sg.inputs, sg.outputs, [o.op for o in sg.ops]) == (["y"], ["z"], ["CLAMP"])


def _fake_vela(refuse: str, calls: list):
    """A compiler that refuses any graph holding an op of kind ``refuse`` (with Vela's kind of message)."""
    def compile_(flatbuffer, out_dir, accelerator, system_config, memory_mode, name="segment"):
        from tabula.tosa import describe

        ops = describe(flatbuffer)["ops"]
        calls.append(ops)
        if refuse in ops:
            raise VelaRefused(f"RuntimeError: Non-passthrough operation ({refuse.title()}) could not run on NPU")
        return VelaResult(cmd_data=b"COP1" + bytes(12), weight_data=b"", weight_region=0, scratch_size=64,
                          scratch_region=1, scratch_fast_size=0, scratch_fast_region=2,
                          inputs=[{"shape": [1, 1, 1, 4, 4, 8], "elem_size": 1, "region": 1, "offset": 0}],
                          outputs=[{"shape": [1, 1, 1, 4, 4, 8], "elem_size": 1, "region": 1, "offset": 0}],
                          summary={"cycles_total": float(len(ops))})
    return compile_


@pytest.mark.tosa
def test_an_op_vela_refuses_is_found_by_bisection_and_moved_to_the_cpu(tmp_path):
    """Seven CLAMPs and a TRANSPOSE in the middle that the fake Vela refuses: the loop finds the TRANSPOSE
    in log2(8) + 2 compiles, puts it on the CPU with Vela's message, and the two sides compile."""
    spec = [("CLAMP", "int8", "int8", {"min": -100 + i, "max": 100}) for i in range(4)]
    spec = spec + [("TRANSPOSE", "int8", "int8", {"perms": [0, 1, 2, 3]})] + spec[:3]
    g = _chain(spec)
    engines, reasons = mark(g, "ethos-u55")
    assert engines == [NPU] * 8
    calls: list = []
    compiled, n = compile_segments(g, engines, reasons, "ethos-u55-128", "Ethos_U55_High_End_Embedded", "Shared_Sram",
                                   tmp_path, compiler=_fake_vela("TRANSPOSE", calls))
    assert engines == [NPU] * 4 + [CPU] + [NPU] * 3
    assert reasons[4] == "Vela 5.2.0 refused it: RuntimeError: Non-passthrough operation (Transpose) could not run on NPU"
    assert [(c.segment.engine, c.segment.ops) for c in compiled] == [(NPU, [0, 1, 2, 3]), (CPU, [4]), (NPU, [5, 6, 7])]
    assert all(c.vela is not None for c in compiled if c.segment.engine == NPU)
    assert n == len(calls) <= 7
