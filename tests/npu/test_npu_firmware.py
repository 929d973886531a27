"""The whole NPU firmware path on QEMU with the test-only Ethos-U driver stand-in (npu_driver=standin): the
partition, Vela's offsets, the base-pointer table, the input and output copies, the segment boundaries and
the CPU segments between them, bit for bit against the Python reference -- digits (one NPU segment), the
a16w8 attention (NPU, CPU, NPU) and the MobileNet example (softmax in its NPU form); the weights and command
streams linked into DDR and the scratch into SRAM; and a deliberately wrong input offset in the glue fails.

One build folder for the module: every model is generated into the same ``src`` folder, so the kernels'
objects are compiled once and each model costs its own model.c and the link."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tabula
from helpers import scons
from tabula.deploy import run_on_board
from tabula.npu import compile_npu, legalize
from tabula.stages import generate_sources

pytestmark = [pytest.mark.qemu, pytest.mark.vela, pytest.mark.tosa]

TARGET = "ethos-u55-128"


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    """``firmware(program, name, patch=None)`` -> (ELF path, the NPU program): legalize, plan, generate with
    the stand-in (``patch(model_c_path)`` may edit the C), build."""
    work = tmp_path_factory.mktemp("npu_fw")

    def build(program, name: str, patch=None):
        g, _ = legalize(program.graph, TARGET)
        ir = work / name
        npu_program = tabula.Program(g)
        npu_program.save(ir)
        compile_npu(g, TARGET, "corstone300", ir / "npu", model=name)
        generate_sources(ir, work / "src", name, "corstone300", profile=True, npu_plan=ir / "npu", npu_driver="standin")
        if patch is not None:
            patch(work / "src" / "model.c")
        scons("-j2", "-f", "tests/fixtures/ethosu_standin/SConstruct", f"src={work / 'src'}", f"build_dir={work / 'fw'}",
              f"npu={TARGET}")
        return work / "fw" / "firmware.elf", npu_program

    return build


def _run(elf, program, x) -> tuple[int, list, object]:
    """Run every sample of ``x`` on QEMU; (mismatching elements, the reference outputs, the session)."""
    ins = [program.quantize_inputs(x[i : i + 1]) for i in range(len(x))]
    refs = [program.run_int(*xi) for xi in ins]
    session = run_on_board(elf, "corstone300", [b"".join(a.tobytes() for a in xi) for xi in ins], runner="qemu",
                           log_path=elf.parent / "run.log")
    bad = 0
    for outs, ref in zip(session.outputs, refs):
        bad += sum(int((np.frombuffer(b, r.dtype).reshape(r.shape) != r).sum()) for b, r in zip(outs, ref))
    assert len(session.outputs) == len(x) and session.exit_code == 0
    return bad, refs, session


def _symbols(elf) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        tab = ELFFile(f).get_section_by_name(".symtab")
        return {s.name: int(s["st_value"]) for s in tab.iter_symbols() if s.name.startswith("tabula_npu_")}


@pytest.mark.parametrize("name,scheme,segments", [("digits", "int8", "N"), ("attention", "a16w8", "NCN"),
                                                  ("mobilenet", "int8", "N")])
def test_the_standin_runs_the_npu_firmware_bit_exact_on_qemu(npu_model, firmware, name, scheme, segments):
    program, x = npu_model(name, scheme)
    elf, npu_program = firmware(program, f"{name}-{scheme}")
    bad, refs, session = _run(elf, npu_program, x)
    assert bad == 0
    assert len({r[0].tobytes() for r in refs}) == len(refs)  # the samples' outputs differ: the comparison sees values
    plan = tabula.npu.load_plan(elf.parent.parent / f"{name}-{scheme}" / "npu")
    assert "".join(s["engine"][0].upper() for s in plan["segments"]) == segments
    # one timed entry per CPU op and one per NPU segment: the NPU segments' calls are the NPU_SEGMENT ones
    assert session.op_ticks and all(len(t) == len(session.op_ticks[0]) for t in session.op_ticks)
    syms = _symbols(elf)
    assert 0x60000000 <= syms["tabula_npu_seg0_weights"] < 0x70000000 and 0x60000000 <= syms["tabula_npu_seg0_cmd"] < 0x70000000
    assert 0x21000000 <= syms["tabula_npu_scratch"] < 0x21200000  # SRAM, which the NPU reaches (the TCMs it does not)


def test_a_wrong_offset_in_the_glue_fails(npu_model, firmware):
    """The glue's offset of segment 0's input moved by 16 bytes (the stand-in keeps Vela's): mismatches."""
    which = "inputs"
    program, x = npu_model("digits", "int8")

    def shift(model_c):
        text = model_c.read_text()
        pat = re.compile(r"(tabula_npu_seg0_%s\[\d+\] = \{ \{ \d+u, )(\d+)u" % which)
        assert pat.search(text), "the glue's offset table was not found in model.c"
        model_c.write_text(pat.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + 16}u", text, count=1))

    elf, npu_program = firmware(program, f"digits-wrong-{which}", patch=shift)
    bad, refs, _ = _run(elf, npu_program, x)
    assert bad > 0
