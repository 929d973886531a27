"""Codegen's fusion of an int16 table op's TOSA sequence into one tabula_table16_s16 call: which ops
fuse, what the arena saves, when a group is left alone.  (Bit-exactness of the fused kernel against the
op sequence: tests/test_tosa_conformance.py on every code; against the reference on whole models: the
a16w8 end-to-end tests.)"""
from __future__ import annotations

from tabula.codegen import generate
from tabula.codegen.arena import plan_arena
from tabula.codegen.fuse import FUSED_TABLE16, fuse_table16
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
