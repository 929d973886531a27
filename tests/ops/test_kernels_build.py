"""Every kernel source compiles clean, alone, under strict host flags and for the Cortex-M55, and
every IR op with a C kernel has its file (one function per file, named after the op)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "firmware_templates" / "runtime"
SOURCES = sorted((ROOT / "firmware_templates" / "kernels").rglob("*.c"))
STRICT = ["-std=c99", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", "-Wconversion", "-Wsign-conversion", "-Wshadow",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wcast-align", "-Wundef"]
M55 = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-ffreestanding"]
M4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-ffreestanding"]
#: every kernel named in tabula_kernels.h must have its file (tabula_table_s16 is owned elsewhere)
KERNELS = {
    "tabula_apply_scale_32", "tabula_conv2d_s8", "tabula_fully_connected_s8", "tabula_rescale_s32_s8",
    "tabula_rescale_s8_s8", "tabula_table_s8", "tabula_max_pool2d_s8", "tabula_transpose", "tabula_slice", "tabula_pad", "tabula_resize_nearest",
    "tabula_apply_scale_16", "tabula_conv2d_s16", "tabula_fully_connected_s16", "tabula_rescale_s64_s16",
    "tabula_rescale_s32_s16", "tabula_rescale_s16_s16", "tabula_rescale_s8_s32", "tabula_rescale_s16_s32",
    "tabula_rescale_s32_s32", "tabula_table16_s16",
    "tabula_max_pool2d_s16", "tabula_avg_pool2d_s8", "tabula_avg_pool2d_s16", "tabula_clamp_s8", "tabula_clamp_s16",
    "tabula_add_s32", "tabula_sub_s32", "tabula_mul_s32", "tabula_concat",
}


def test_kernel_files_present():
    names = {p.stem for p in SOURCES}
    assert KERNELS <= names, sorted(KERNELS - names)
    for p in SOURCES:  # the file defines the function it is named after
        assert f" {p.stem}(" in p.read_text(), p.name


def test_every_header_function_has_its_file():
    import re

    declared = set(re.findall(r"^(?:tabula_status|int64_t)\s+(tabula_\w+)\(", (RUNTIME / "tabula_kernels.h").read_text(), re.M))
    assert KERNELS | {"tabula_table_s16"} == declared  # the list above is complete
    assert {p.stem for p in SOURCES} <= declared, "a kernel file without a declaration in tabula_kernels.h"


def _compile(cc: str, extra: list[str], tmp_path: Path) -> None:
    errors = []
    for src in SOURCES:
        r = subprocess.run([cc, *extra, *STRICT, "-I", str(RUNTIME), "-I", str(ROOT / "firmware_templates" / "kernels"), "-c", str(src), "-o", str(tmp_path / "k.o")],
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


def test_cortex_m4_strict(tmp_path):
    cc = shutil.which("arm-none-eabi-gcc")
    if cc is None:
        pytest.skip("arm-none-eabi-gcc not found on PATH")
    _compile(cc, M4, tmp_path)
