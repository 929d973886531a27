"""The kernels and their manifest (firmware_templates/kernels/manifest.toml) agree: every source the
manifest lists compiles clean, alone, under strict flags for the host, the Cortex-M55 (Helium) and
the Cortex-M4, against the header generated from the manifest; the .c files under
firmware_templates/kernels are exactly the manifest's build list; the built library exports every
manifest kernel and no other; each file defines the kernel it is named after, and a variant file
of a typed body (<family>/tabula_<op>_impl.h) stays a few lines of macros."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tabula import kernels

SOURCES = kernels.sources()
KERNELS_DIR = kernels.kernels_dir()
STRICT = ["-std=c99", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", "-Wconversion", "-Wsign-conversion", "-Wshadow",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wcast-align", "-Wundef"]
M55 = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-ffreestanding"]
M4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-ffreestanding"]


def _code_lines(text: str) -> list[str]:
    """The lines of C that are not blank and not comments."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return [ln for ln in (re.sub(r"//.*", "", ln).strip() for ln in text.splitlines()) if ln]


def test_sources_on_disk_are_the_manifest_build_list():
    on_disk = set(KERNELS_DIR.rglob("*.c"))
    listed = set(SOURCES)
    assert not on_disk - listed, f"kernel sources the manifest does not list: {sorted(map(str, on_disk - listed))}"
    assert not listed - on_disk, f"manifest kernels without a source: {sorted(map(str, listed - on_disk))}"
    assert len(SOURCES) == len(listed), "a source listed twice"


def test_each_file_defines_the_kernel_it_is_named_after():
    for k in kernels.load():
        text = k.source.read_text()
        fn = re.search(r"^#define TABULA_FN(?:_[A-Z]+)? (\w+)\s*$", text, re.M)  # TABULA_FN, or a variant such as TABULA_FN_CLAMP
        if fn:  # a variant of a typed body
            assert fn[1] == k.name == k.source.stem, k.source
            impl = re.findall(r'^#include "(tabula_\w+_impl\.h)"', text, re.M)
            assert len(impl) == 1 and (k.source.parent / impl[0]).is_file(), k.source
            assert len(_code_lines(text)) <= 5, f"{k.source.name}: a variant file is at most 5 lines of C"
        else:
            assert re.search(rf"^\w[\w ]*\b{k.name}\(", text, re.M), f"{k.source.name} does not define {k.name}"


def test_every_typed_body_is_used():
    used = {m for src in SOURCES for m in re.findall(r'^#include "(tabula_\w+_impl\.h)"', src.read_text(), re.M)}
    bodies = {p.name for p in KERNELS_DIR.rglob("*_impl.h")}
    assert bodies == used


def test_generated_header_declares_every_kernel_once():
    text = kernels.header_text()
    declared = re.findall(r"^(?:tabula_status|int64_t)\s+(tabula_\w+)\(", text, re.M)
    assert declared == kernels.names()
    assert '#include "tabula_types.h"' in text and "do not edit" in text
    assert kernels.header_text() == text  # deterministic


def test_write_header_replaces_the_file(tmp_path):
    target = tmp_path / "inc" / kernels.HEADER_NAME
    kernels.write_header(target)
    target.write_text("stale")
    assert kernels.write_header(target) == target and target.read_text() == kernels.header_text()
    assert [p.name for p in target.parent.iterdir()] == [kernels.HEADER_NAME]  # no temporary left


@pytest.mark.host
def test_library_exports_exactly_the_manifest_kernels(kernel_lib):
    out = subprocess.run(["nm", "-D", "--defined-only", str(kernel_lib.path)], capture_output=True, text=True,
                         check=True).stdout
    exported = {ln.split()[-1] for ln in out.splitlines() if ln.split()[-1].startswith("tabula_")}
    assert exported == set(kernels.names())
    for name in kernels.names():  # and every one is bound with the manifest's signature
        fn = getattr(kernel_lib.lib, name)
        assert (fn.restype, fn.argtypes) == tuple(kernels.signature(next(k for k in kernels.load() if k.name == name)))


@pytest.mark.parametrize("bad, match", [
    ("[[x]]\ndoc = 'd'\nprototype = 'tabula_status tabula_a_{t}(int32_t n)'\nvariants = [{u = 'int8'}]\n",
     "uses {t}"),
    ("[[x]]\ndoc = 'd'\nprototype = 'tabula_status tabula_a(int32_t n)'\n[[y]]\ndoc = 'e'\n"
     "prototype = 'tabula_status tabula_a(int32_t m)'\n", "declared twice"),
    ("[[x]]\nprototype = 'tabula_status tabula_a(int32_t n)'\n", "missing"),
    ("[x]\ndoc = 'd'\nprototype = 'tabula_status tabula_a(int32_t n)'\n", r"\[\[x\]\]"),
    ("[[x]]\ndoc = 'd'\nprototype = 'tabula_a(int32_t n)'\n", "cannot read the prototype"),
])
def test_manifest_errors_name_the_problem(tmp_path, bad, match):
    path = tmp_path / "manifest.toml"
    path.write_text(bad)
    with pytest.raises(kernels.ManifestError, match=match):
        kernels.load(path)


def test_ctypes_of_every_c_type_in_use():
    import ctypes as C

    assert kernels.ctype("int32_t") is C.c_int32 and kernels.ctype("int64_t") is C.c_int64
    assert kernels.ctype("tabula_status") is C.c_int
    assert kernels.ctype("const int8_t *") is C.POINTER(C.c_int8)
    assert kernels.ctype("const int16_t *const *") is C.POINTER(C.POINTER(C.c_int16))
    assert kernels.ctype("void *") is C.c_void_p and kernels.ctype("const void *const *") is C.POINTER(C.c_void_p)
    assert kernels.ctype("const tabula_window *") is C.POINTER(kernels.window_type())
    for bad in ("float", "unsigned int", "tabula_window", "void"):
        with pytest.raises(kernels.ManifestError, match="no ctypes type"):
            kernels.ctype(bad)
    assert kernels.window_fields()[:4] == ("n", "h", "w", "c") and kernels.status_codes()["TABULA_OK"] == 0


def _compile(cc: str, extra: list[str], tmp_path: Path) -> None:
    include = tmp_path / "include"
    kernels.write_header(include / kernels.HEADER_NAME)
    errors = []
    for src in SOURCES:
        r = subprocess.run([cc, *extra, *STRICT, "-I", str(include), "-I", str(KERNELS_DIR), "-c", str(src),
                            "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            errors.append(f"{src.name}:\n{r.stderr}")
    assert not errors, "\n".join(errors)


@pytest.mark.host
def test_host_strict(tmp_path):
    _compile("cc", [], tmp_path)


@pytest.mark.arm
def test_cortex_m55_strict(tmp_path):
    _compile("arm-none-eabi-gcc", M55, tmp_path)


@pytest.mark.arm
def test_cortex_m4_strict(tmp_path):
    _compile("arm-none-eabi-gcc", M4, tmp_path)
