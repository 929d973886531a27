"""Every kernel source compiles clean, alone, under strict host flags and for the Cortex-M55, and
every IR op with a C kernel has its file (one function per file, named after the op)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "firmware_templates" / "runtime"
SOURCES = sorted((RUNTIME / "kernels").glob("*.c"))
STRICT = ["-std=c99", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", "-Wconversion", "-Wsign-conversion", "-Wshadow",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wcast-align", "-Wundef"]
M55 = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-ffreestanding"]


def test_kernel_files_present():
    names = {p.stem for p in SOURCES}
    assert {"tabula_apply_scale_32", "tabula_conv2d_s8", "tabula_fully_connected_s8", "tabula_rescale_s32_s8",
            "tabula_rescale_s8_s8", "tabula_table_s8", "tabula_max_pool2d_s8", "tabula_transpose"} <= names
    for p in SOURCES:  # the file defines the function it is named after
        assert f" {p.stem}(" in p.read_text(), p.name


def _compile(cc: str, extra: list[str], tmp_path: Path) -> None:
    errors = []
    for src in SOURCES:
        r = subprocess.run([cc, *extra, *STRICT, "-I", str(RUNTIME), "-c", str(src), "-o", str(tmp_path / "k.o")],
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            errors.append(f"{src.name}:\n{r.stderr}")
    assert not errors, "\n".join(errors)


@pytest.mark.host
def test_host_strict(tmp_path):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("host C compiler 'cc' not found on PATH")
    _compile(cc, [], tmp_path)


def test_cortex_m55_strict(tmp_path):
    cc = shutil.which("arm-none-eabi-gcc")
    if cc is None:
        pytest.skip("arm-none-eabi-gcc not found on PATH")
    _compile(cc, M55, tmp_path)
