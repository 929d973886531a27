"""The board, runtime and kernel objects are compiled once per board and flag set
(``build_dir/<board>/.objects/<flags_key>/``, toolchain/firmware.py) and every model of that board links
them: a second model compiles only its own ``model.c`` and ``model_constants.S`` and the runtime's
``main.c`` (which includes ``model.h``); another flag set (``portable=1``) gets its own objects and leaves the first set alone."""
from __future__ import annotations

import re

import pytest

from helpers import scons

pytestmark = pytest.mark.arm


def _compiled(stdout: str) -> list[str]:
    """The object files a (non-terminal, so one line per command) SCons run compiled."""
    return [m.group(1) for m in re.finditer(r"gcc -o (\S+\.o) -c ", stdout)]


def test_second_model_compiles_no_kernel_runtime_or_board_object(tmp_path, digits_dir):
    args = [f"model={digits_dir / 'model.pt2'}", f"calib={digits_dir / 'calib.npz'}", "run=0", "quiet=1",
            f"build_dir={tmp_path}"]
    first = _compiled(scons("board=corstone300", "name=one", *args).stdout)
    shared = tmp_path / "corstone300" / ".objects"
    (key,) = [p.name for p in shared.iterdir()]
    kernels = sorted((shared / key / "obj" / "kernels").glob("*.o"))
    assert len(kernels) >= 50 and len(first) >= len(kernels) + 4
    assert (shared / key / "include" / "tabula_kernels.h").is_file()
    stamps = {p: p.stat().st_mtime_ns for p in kernels}

    # another model (int16 activations: other kernels called) on the same board and flags
    second = _compiled(scons("board=corstone300", "name=two", "scheme=a16w8", *args).stdout)
    assert sorted(second) == sorted([f"{tmp_path}/corstone300/two-a16w8/obj/model/model.o",
                                     f"{tmp_path}/corstone300/two-a16w8/obj/model/model_constants.o",
                                     f"{tmp_path}/corstone300/two-a16w8/obj/runtime/main.o"]), second
    assert (tmp_path / "corstone300" / "two-a16w8" / "firmware.elf").is_file()

    # another flag set: its own folder, every object compiled there, the first set untouched
    third = _compiled(scons("board=corstone300", "name=one", "portable=1", *args).stdout)
    keys = sorted(p.name for p in shared.iterdir())
    assert len(keys) == 2 and key in keys
    other = next(k for k in keys if k != key)
    assert sum(f"/.objects/{other}/obj/kernels/" in o for o in third) == len(kernels)
    assert not any(f"/.objects/{key}/" in o for o in third)
    assert {p: p.stat().st_mtime_ns for p in kernels} == stamps

