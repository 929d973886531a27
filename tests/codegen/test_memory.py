"""Memory from the board's map: board.toml [memory] is the one source of the regions (the linker's
MEMORY block is generated from it), codegen places constants and arena across the regions by size
and speed, models with 1 MiB of weights or a 512 KB arena run bit-exact on Corstone-300, and a model
that fits nowhere is one line naming the region, the bytes needed and the budget."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from helpers import scons
from tabula.boards import list_boards, load_board, repo_root
from tabula.codegen import generate
from tabula.codegen.placement import place
from tabula.errors import StageError
from tabula.ir import Graph, Op, Tensor
from tabula.memory import linker_overflow_line, linker_script, parse_memory

ROOT = repo_root()
KIB = 1024


# ---- board.toml [memory] ------------------------------------------------------------------------
def test_every_board_declares_its_regions_and_the_linker_scripts_take_them_from_there():
    for name in list_boards():
        b = load_board(name)
        mm = b.memory
        assert mm is not None and mm.code in mm.regions and mm.ram in mm.regions, name
        assert mm.candidates("const") and mm.candidates("arena"), name
        if b.linker_script is None:
            continue
        ld = b.linker_script.read_text()
        assert "MEMORY" not in ld and "INCLUDE tabula_memory.ld" in ld, f"{name}: linker.ld must not declare regions"
        text = linker_script(mm)
        for r in mm.regions:
            assert f"({'rw' if r.kind == 'ram' else 'rx'}) : ORIGIN = {r.origin:#010x}, LENGTH = {r.length:#010x}" in text
        assert f'REGION_ALIAS("CODE", {mm.code.ld_name});' in text and f'REGION_ALIAS("RAM", {mm.ram.ld_name});' in text
        assert f"__stack_size = {mm.stack_bytes:#x};" in text


def test_corstone300_map_is_the_sse300_one():
    mm = load_board("corstone300").memory
    got = {r.name: (r.origin, r.length, r.kind, r.speed) for r in mm.regions}
    assert got == {"itcm": (0x0, 512 * KIB, "code", 0), "dtcm": (0x20000000, 512 * KIB, "ram", 0),
                   "sram": (0x21000000, 2048 * KIB, "ram", 1), "fpga_sram": (0x01000000, 2048 * KIB, "ram", 1),
                   "ddr": (0x60000000, 256 * 1024 * KIB, "ram", 2)}
    assert (mm.code.name, mm.ram.name, mm.stack_bytes, mm.heap_bytes) == ("itcm", "dtcm", 64 * KIB, 4 * KIB)
    assert [r.name for r in mm.candidates("const")] == ["itcm", "dtcm", "sram", "fpga_sram", "ddr"]
    assert [r.name for r in mm.candidates("arena")] == ["dtcm", "sram", "fpga_sram", "ddr"]
    # boards that boot from flash keep their constants in flash (RAM is not programmed)
    for name in ("nucleo_h743zi", "numaker_m55m1"):
        assert [r.name for r in load_board(name).memory.candidates("const")] == ["flash"]


REGION = dict(origin=0x20000000, length=0x10000, kind="ram", speed=0, holds=["ram", "arena"])
CODE = dict(origin=0, length=0x10000, kind="code", speed=0, holds=["code", "const"])


@pytest.mark.parametrize("table,message", [
    ({}, "no [memory] table"),
    ({"code": CODE, "dtcm": REGION}, "lower-case identifier other than code/ram"),
    ({"itcm": CODE, "dtcm": {**REGION, "kind": "sram"}}, "kind 'sram' is not one of code, ram, rom"),
    ({"itcm": CODE, "dtcm": {**REGION, "holds": ["ram", "weights"]}}, "holds ['weights']"),
    ({"itcm": CODE, "dtcm": {**REGION, "origin": 0x8000}}, "regions itcm and dtcm overlap"),
    ({"itcm": CODE, "dtcm": REGION, "more": {**REGION, "origin": 0x30000000}}, "exactly one [memory] region must hold 'ram' (2 do)"),
    ({"flash": {**CODE, "kind": "rom"}, "dtcm": {**REGION, "holds": ["ram", "const"]}}, "only rom is programmed"),
    ({"itcm": CODE, "dtcm": {k: v for k, v in REGION.items() if k != "speed"}}, "region dtcm lacks speed"),
    ({"itcm": CODE, "dtcm": REGION, "stack": 4096}, "[memory] keys stack are unknown"),
    ({"itcm": CODE, "dtcm": REGION, "stack_bytes": 0x20000}, "stack_bytes + heap_bytes exceed region dtcm"),
])
def test_a_bad_memory_table_is_one_clear_error(table, message):
    with pytest.raises(ValueError) as e:
        parse_memory(table, "myboard", "boards/myboard/board.toml")
    assert message in str(e.value) and str(e.value).startswith("boards/myboard/board.toml")


# ---- placement --------------------------------------------------------------------------------
def _toy_map():
    """code 64 KiB (16 KiB kept for code), fast 64 KiB (ram: 4 KiB stack, 1 KiB heap), slow 1 MiB."""
    return parse_memory({
        "stack_bytes": 4 * KIB, "heap_bytes": KIB, "code_bytes": 16 * KIB,
        "rom": dict(origin=0, length=64 * KIB, kind="code", speed=0, holds=["code", "const"]),
        "fast": dict(origin=0x20000000, length=64 * KIB, kind="ram", speed=0, holds=["ram", "arena", "const"]),
        "slow": dict(origin=0x60000000, length=1024 * KIB, kind="ram", speed=1, holds=["arena", "const"]),
    }, "toy")


def _chain(sizes: list[int]) -> Graph:
    """x -> t1 -> t2 ... -> y, int8 tensors of the given byte sizes (a chain of CLAMPs)."""
    g = Graph()
    names = ["x"] + [f"t{i}" for i in range(1, len(sizes) - 1)] + ["y"]
    for n, s in zip(names, sizes):
        g.add_tensor(Tensor(n, (s,), "int8"))
    for a, b in zip(names, names[1:]):
        g.ops.append(Op("CLAMP", [a], [b], {"min": -128, "max": 127}))
    g.inputs, g.outputs = ["x"], ["y"]
    return g


def _assert_no_live_overlap(g: Graph, p) -> None:
    from tabula.codegen.arena import live_ranges

    live = live_ranges(g)
    for part in p.parts:
        items = [(n, o, g.tensors[n].nbytes) for n, o in part.plan.offsets.items()]
        for i, (a, oa, sa) in enumerate(items):
            for b, ob, sb in items[i + 1:]:
                if not (live[a][1] < live[b][0] or live[b][1] < live[a][0]):
                    assert oa + sa <= ob or ob + sb <= oa, (a, b)
        assert max((o + s for _, o, s in items), default=0) <= part.plan.size


def test_a_big_activation_moves_to_the_slower_region_and_big_constants_follow_speed_then_size():
    g = _chain([1000, 200_000, 8000, 100])
    p = place(g, {"c_small": 100, "c_mid": 40_000, "c_big": 100_000}, _toy_map(), "toy")
    assert [(q.region, q.cname, q.section) for q in p.parts] == [
        ("fast", "tabula_arena", None), ("slow", "tabula_arena_slow", ".tabula_slow_bss")]
    assert p.tensor_part == {"x": 0, "t1": 1, "t2": 0, "y": 0}
    _assert_no_live_overlap(g, p)
    assert p.const_region == {"c_small": "rom", "c_mid": "rom", "c_big": "slow"}
    assert p.const_section == {"c_small": None, "c_mid": None, "c_big": ".tabula_slow_rodata"}
    regions = {r["name"]: r for r in p.regions}
    for r in regions.values():  # nothing placed beyond a budget
        assert r["constants"] + r["arena"] <= r["budget"]
    assert regions["rom"]["budget"] == 48 * KIB and regions["fast"]["budget"] == 64 * KIB - 4 * KIB - KIB - 1008 - KIB
    assert regions["slow"]["arena"] == 200_000 and regions["slow"]["constants"] == 100_000


def test_a_model_that_fits_the_fast_regions_gets_no_section_attribute(digits_program, tmp_path):
    board = load_board("corstone300")
    placed = generate(digits_program.graph, tmp_path / "board", "digits", board.memory)
    plain = generate(digits_program.graph, tmp_path / "plain", "digits")
    assert placed.model_c.read_bytes() == plain.model_c.read_bytes()  # digits' C (and so its code) is unchanged
    assert "section(" not in placed.model_c.read_text()
    p = placed.placement
    assert [(q.region, q.section) for q in p.parts] == [("dtcm", None)]
    assert set(p.const_region.values()) == {"itcm"}
    used = {r["name"]: (r["constants"], r["arena"]) for r in p.regions if r["constants"] or r["arena"]}
    assert set(used) == {"itcm", "dtcm"} and used["dtcm"] == (0, placed.arena.size)


def test_a_model_too_big_for_every_region_is_one_line_with_region_bytes_and_budget():
    mm = _toy_map()
    with pytest.raises(StageError) as e:
        place(_chain([100, 100]), {"w": 2_000_000, "b": 64}, mm, "toy")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("toy does not fit toy: region slow needs 2000000 bytes for constants, its budget is 1048576 bytes")
    assert "constant array w of 2000000 bytes that rom, fast had no room for" in msg
    with pytest.raises(StageError) as e:
        place(_chain([100, 1_500_000, 100]), {}, mm, "toy")
    msg = str(e.value)
    assert msg.startswith("toy does not fit toy: region slow needs 1500000 bytes for arena, its budget is 1048576 bytes")
    assert "activation t1 [1500000] int8 of 1500000 bytes that fast had no room for" in msg


def test_linker_overflows_become_one_line():
    mm = load_board("corstone300").memory
    ld = ("ld: firmware.elf section `.rodata' will not fit in region `ITCM'\n"
          "ld: region `ITCM' overflowed by 1234 bytes\ncollect2: error: ld returned 1 exit status\n")
    line = linker_overflow_line(ld, mm)
    assert line.startswith("the firmware does not fit corstone300: region itcm needs 525522 bytes, its budget is 524288 bytes")
    assert "raise code_bytes in boards/corstone300/board.toml" in line
    # the stack sits at a fixed address: ld says "by 0 bytes" and which sections run into it
    ram = ("ld: RAM overflow: .data + .bss + heap + stack exceed the RAM region\n"
           "ld: section .stack VMA [20070000,2007ffff] overlaps section .bss VMA [20000020,2007403f]\n"
           "ld: region `DTCM' overflowed by 0 bytes\n")
    assert linker_overflow_line(ram, mm).startswith(
        f"the firmware does not fit corstone300: region dtcm needs {0x74040 + 4096 + 65536} bytes, its budget is 524288 bytes")
    assert linker_overflow_line("ld: undefined reference to `foo'\n", mm) is None


# ---- on the board -------------------------------------------------------------------------------
def _save(model: nn.Module, x: torch.Tensor, d, name: str):
    torch.export.save(torch.export.export(model.eval(), (x[:1],)), d / f"{name}.pt2")
    np.savez(d / f"{name}_calib.npz", x=x.numpy())
    np.savez(d / f"{name}_test.npz", x=x[:2].numpy())
    return [f"model={d / f'{name}.pt2'}", f"calib={d / f'{name}_calib.npz'}", f"data={d / f'{name}_test.npz'}"]


def _symbols(elf) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        return {s.name: s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols() if s.name}


@pytest.mark.qemu
def test_1_mb_of_weights_spread_over_itcm_dtcm_and_sram_runs_bit_exact_on_corstone300(tmp_path):
    """1,081,344 bytes of int8 weights: smallest first, the 256 KiB matrix fits ITCM (448 KiB after
    the code's 64 KiB), one 400 KiB matrix DTCM, the other SRAM."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 400), nn.ReLU(), nn.Linear(400, 1024), nn.ReLU(), nn.Linear(1024, 256))
    args = _save(model, torch.randn(8, 1024), tmp_path, "big")
    p = scons("board=corstone300", f"build_dir={tmp_path}", *args)
    out = tmp_path / "corstone300" / "big"
    r = json.loads((out / "results.json").read_text())
    assert r["n_outputs_received"] == 2 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    assert r["output_elements"] == 2 * 256
    mem = {m["region"]: m for m in r["memory"]}
    assert mem["sram"]["constants"] == mem["sram"]["used"] == 400 * 1024 and mem["sram"]["n_constants"] == 1
    assert 400 * 1024 <= mem["dtcm"]["constants"] < 401 * 1024 and mem["dtcm"]["arena"] == r["arena_bytes"]
    assert 256 * 1024 < mem["itcm"]["constants"] < 300 * 1024  # with the biases, multipliers and shifts
    for m in mem.values():
        assert m["constants"] + m["arena"] <= m["budget"] and (m["used"] or 0) <= m["length"]
    code = mem["itcm"]["used"] - mem["itcm"]["constants"]  # vectors, .text, runtime .rodata
    assert code < load_board("corstone300").memory.code_bytes // 2  # the estimate codegen keeps for code holds
    assert "memory sram" in p.stdout and "memory dtcm" in p.stdout  # the report says which region holds what
    # the weights are bytes (model_constants.bin), each in its region's section (model_constants.S)
    c = (out / "src" / "model.c").read_text() + (out / "src" / "model_constants.S").read_text()
    sections = [ln.split()[1].split(",")[0] for ln in c.splitlines() if ln.strip().startswith(".section")]
    assert sections.count(".tabula_sram_rodata") == sections.count(".tabula_dtcm_rodata") == 1
    sym = _symbols(out / "firmware.elf")
    regions = {name: load_board("corstone300").memory.locate(sym[f"tabula_const_{name}"]).name
               for name in ("linear_weight", "linear_1_weight", "linear_2_weight")}
    assert sorted(regions.values()) == ["dtcm", "itcm", "sram"] and regions["linear_2_weight"] == "itcm"
    print(f"1 MB weights: {r['instructions_per_inference']} instructions/inference, flash {r['flash_bytes']} B, "
          f"{regions}")


class _Wide(nn.Module):
    """80x80x40 int8 activations, two live at once around conv2: 256,000 B each, a 512,000-byte arena
    (the convs requantize in their epilogue: no int32 accumulator in the arena)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 40, 3, padding=1)
        self.conv2 = nn.Conv2d(40, 40, 1)
        self.fc = nn.Linear(40, 4)

    def forward(self, x):
        return self.fc(torch.mean(torch.relu(self.conv2(torch.relu(self.conv(x)))), dim=(2, 3)))


@pytest.mark.qemu
def test_a_512_kb_arena_is_split_over_dtcm_and_sram_and_runs_bit_exact_on_corstone300(tmp_path):
    torch.manual_seed(0)
    args = _save(_Wide(), torch.randn(8, 1, 80, 80), tmp_path, "wide")
    scons("board=corstone300", f"build_dir={tmp_path}", *args)
    out = tmp_path / "corstone300" / "wide"
    r = json.loads((out / "results.json").read_text())
    assert r["n_outputs_received"] == 2 and r["bit_exact_mismatches"] == 0 and r["device_exit_code"] == 0
    mem = {m["region"]: m for m in r["memory"]}
    assert r["arena_bytes"] >= 512_000 > mem["dtcm"]["budget"]  # more than DTCM holds for the arena
    assert mem["sram"]["arena"] == 80 * 80 * 40  # one of the two int8 activations moved out
    assert mem["dtcm"]["arena"] + mem["sram"]["arena"] == r["arena_bytes"]
    assert mem["dtcm"]["arena"] <= mem["dtcm"]["budget"] and mem["dtcm"]["used"] <= 512 * KIB
    sym = _symbols(out / "firmware.elf")
    assert 0x20000000 <= sym["tabula_arena"] < 0x20080000 and 0x21000000 <= sym["tabula_arena_sram"] < 0x21200000
    print(f"512 KB arena: {r['instructions_per_inference']} instructions/inference, arena {r['arena_bytes']} B")


@pytest.mark.arm
def test_a_model_too_big_for_the_board_stops_before_the_build_with_one_line(tmp_path):
    """2.2 MB of weights for the Nucleo-H743ZI's 2 MiB flash: `tabula validate` (SCons) and
    `tabula codegen --board` both end in one line, exit code 2, before anything compiles."""
    torch.manual_seed(0)
    _save(nn.Sequential(nn.Linear(2048, 1100), nn.ReLU(), nn.Linear(1100, 4)), torch.randn(4, 2048), tmp_path, "huge")
    # this checkout's tabula (a bare `python -m tabula.cli` imports whatever is installed); a stand-in pyocd
    # that lists one probe (validate checks for the board's probe before it builds anything)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pyocd").write_text(f"#!{sys.executable}\nprint('{{\"status\": 0, \"boards\": "
                                            "[{\"unique_id\": \"0001\", \"info\": \"probe\"}]}')\n")
    (tmp_path / "bin" / "pyocd").chmod(0o755)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "python"),
           "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run([sys.executable, "-m", "tabula.cli", "validate", "--board", "nucleo_h743zi", "--model",
                        str(tmp_path / "huge.pt2"), "--data", str(tmp_path / "huge_test.npz"), "--calib",
                        str(tmp_path / "huge_calib.npz"), "--build-dir", str(tmp_path / "b")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    errors = [ln for ln in p.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
    m = re.search(r"huge does not fit nucleo_h743zi: region flash needs (\d+) bytes for constants, its budget is "
                  r"2031616 bytes \(2097152 bytes less 65536 kept for code; constant array linear_weight of 2252800 "
                  r"bytes\); make the model smaller", errors[0])
    assert m and int(m.group(1)) > 2048 * 1100, errors[0]
    out = tmp_path / "b" / "nucleo_h743zi" / "huge"
    assert not (out / "src" / "model.c").exists() and not (out / "obj" / "model").exists()
    c = subprocess.run([sys.executable, "-m", "tabula.cli", "codegen", "--ir", str(out), "--out", str(tmp_path / "src"),
                        "--name", "huge", "--board", "nucleo_h743zi"], capture_output=True, text=True, env=env)
    assert c.returncode == 2 and c.stderr.strip() == f"tabula: error: {errors[0].split('build failed: ')[-1]}"


@pytest.mark.arm
def test_a_link_that_still_overflows_is_one_tabula_line(tmp_path):
    """Hand-written C that codegen did not place (600 KiB of .rodata with the echo model) overflows
    ITCM at link time: one `tabula: error:` line with region, bytes, budget instead of ld's."""
    (tmp_path / "big.c").write_text("const unsigned char tabula_big[600u * 1024u] = {1};\n")
    (tmp_path / "SConstruct").write_text(
        "import os, sys\n"
        "from tabula.boards import load_board, repo_root\n"
        "sys.path.insert(0, str(repo_root() / 'toolchain'))\n"
        "from firmware import TOOLPATH, build_firmware\n"
        "board = load_board('corstone300')\n"
        "env = Environment(tools=[], ENV=os.environ, TABULA_BOARD=board)\n"
        "env.Tool(board.toolchain, toolpath=TOOLPATH)\n"
        "env.Append(LINKFLAGS=['-Wl,-u,tabula_big'])  # keep it through --gc-sections\n"
        "echo = os.path.join(str(repo_root()), 'tests', 'fixtures', 'echo_model', 'model.c')\n"
        "Default(build_firmware(env, board, [echo, 'big.c'], 'out'))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    p = subprocess.run([sys.executable, "-m", "SCons", "-Q"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode != 0
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("scons: ***")]
    assert len(lines) == 1 and "overflowed" not in p.stderr, p.stderr
    assert lines[0].startswith("tabula: error: the firmware does not fit corstone300: region itcm needs ")
    assert "its budget is 524288 bytes" in lines[0]
