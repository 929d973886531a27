"""Large constant arrays go to ``model_constants.bin`` (assembled by ``model_constants.S`` with ``.incbin``)
instead of C text: the bytes sit at the offsets the sources name, and a firmware built so computes exactly
what the all-C-text one does (both equal to the integer reference) on the host build."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tabula import codegen

ROOT = codegen.ROOT


def _generate(program, out, min_bytes, monkeypatch):
    monkeypatch.setattr(codegen, "BINARY_MIN_BYTES", min_bytes)
    return codegen.generate(program.graph, out, "digits")


def test_large_arrays_are_bytes_at_the_offsets_model_c_names(digits_program, tmp_path, monkeypatch):
    _generate(digits_program, tmp_path, 1024, monkeypatch)
    c = (tmp_path / "model.c").read_text()
    s = (tmp_path / "model_constants.S").read_text()
    blob = (tmp_path / "model_constants.bin").read_bytes()
    declared = re.findall(r"/\* (\S+) \[[^\]]*\] (\w+) \*/\n/\* (\d+) bytes at offset (\d+) of model_constants.bin, "
                          r"as (\w+) in (\S+) \(model_constants.S\) \*/\nextern const (\w+) (\w+)\[(\d+)\] "
                          r"__asm__\(\"\5\"\) __attribute__\(\(aligned\(16\)\)\);", c)
    assert declared, "no binary array in the digits model (its 16x3x3x8 conv weights are 1152 bytes)"
    consts = digits_program.graph.constants
    for name, dtype, nbytes, offset, symbol, section, ctype, cname, count in declared:
        nbytes, offset = int(nbytes), int(offset)
        assert offset % 16 == 0 and nbytes >= 1024 and ctype == f"{dtype}_t"
        want = np.asarray(consts[name]).astype(np.dtype(dtype).newbyteorder("<")).tobytes()
        assert blob[offset : offset + nbytes] == want
        assert f'    .section {section},"a",%progbits\n    .balign 16\n' in s
        assert f"{symbol}:\n    .incbin \"model_constants.bin\", {offset}, {nbytes}\n" in s
        assert not re.search(rf"static const \w+ {cname}\[", c)
    # the small ones stay C text
    assert re.search(r"static const int32_t \w+__requant\[\d+\]", c)


@pytest.mark.host
def test_binary_constants_give_the_outputs_of_c_text_on_host(digits_program, digits_quantized, tmp_path, monkeypatch):
    from tabula.deploy import run_on_board

    _, _, x, _ = digits_quantized
    ints = [digits_program.quantize_inputs(x[i : i + 1])[0] for i in range(40)]
    inputs = [np.ascontiguousarray(q).tobytes() for q in ints]
    want = [digits_program.run_int(q)[0].tobytes() for q in ints]
    got = {}
    for min_bytes in (1, 10**9):  # every array binary (int32 ones too) / every array C text
        work = tmp_path / str(min_bytes)
        _generate(digits_program, work / "src", min_bytes, monkeypatch)
        c = (work / "src" / "model.c").read_text()
        text = re.findall(r"static const \w+ \w+\[\d+\] __attribute__", c)
        assert bool(text) == (min_bytes > 1) and ("extern const" in c) == (min_bytes == 1)
        assert ((work / "src" / "model_constants.bin").stat().st_size > 0) == (min_bytes == 1)
        (work / "SConstruct").write_text(
            "import os, sys\n"
            "from tabula.boards import load_board, repo_root\n"
            "sys.path.insert(0, str(repo_root() / 'toolchain'))\n"
            "from firmware import TOOLPATH, build_firmware\n"
            "board = load_board('host')\n"
            "env = Environment(tools=[], ENV=os.environ, TABULA_BOARD=board)\n"
            "env.Tool(board.toolchain, toolpath=TOOLPATH)\n"
            "Default(build_firmware(env, board, ['src/model.c', 'src/model_constants.S', 'src/model_constants.bin'], 'out'))\n")
        p = subprocess.run([sys.executable, "-m", "SCons", "-Q"], cwd=work, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        r = run_on_board(work / "out" / "firmware", "host", inputs)
        got[min_bytes] = [o[0] for o in r.outputs]
    assert got[1] == got[10**9] == want
