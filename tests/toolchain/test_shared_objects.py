"""The board, runtime and kernel objects are compiled once per board and flag set
(``build_dir/<board>/.objects/<flags_key>/``, toolchain/firmware.py) and every model of that board links
them: a second model compiles only its own ``model.c`` and ``model_constants.S``, the runtime's
``main.c`` (which includes ``model.h``) and the kernels it calls that no model compiled before; a model
compiles only the kernels its ``model.c`` names (and the kernels those call); another flag set
(``portable=1``) gets its own objects and leaves the first set alone."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from helpers import scons

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "toolchain"))
from firmware import kernels_used  # noqa: E402  (toolchain/firmware.py)

pytestmark = pytest.mark.arm


def _compiled(stdout: str) -> list[str]:
    """The object files a (non-terminal, so one line per command) SCons run compiled."""
    return [m.group(1) for m in re.finditer(r"gcc -o (\S+\.o) -c ", stdout)]


def _kernels_of(build: Path) -> list[str]:
    """The kernels the firmware of ``build`` needs, by toolchain/firmware.py's own reading of its model.c."""
    return kernels_used([(build / "src" / "model.c").read_text()])


def test_second_model_compiles_no_kernel_runtime_or_board_object_again(tmp_path, digits_dir):
    args = [f"model={digits_dir / 'model.pt2'}", f"calib={digits_dir / 'calib.npz'}", "run=0", "quiet=1",
            f"build_dir={tmp_path}"]
    first = _compiled(scons("board=corstone300", "name=one", *args).stdout)
    shared = tmp_path / "corstone300" / ".objects"
    (key,) = [p.name for p in shared.iterdir()]
    kernel_objs = sorted((shared / key / "obj" / "kernels").glob("*.o"))
    # only the kernels digits calls (conv, fully connected, pool, table, transpose, ...), not the 80-odd others
    used = _kernels_of(tmp_path / "corstone300" / "one")
    assert sorted(p.stem for p in kernel_objs) == sorted(used)
    assert {"tabula_conv2d_s8_folded", "tabula_max_pool2d_s8", "tabula_table_s8"} <= set(used)
    assert 5 <= len(used) <= 20 and len(first) >= len(used) + 4
    assert "tabula_conv2d_s16" in used  # named inside tabula_conv2d_s8's source: the closure reaches it
    assert (shared / key / "include" / "tabula_kernels.h").is_file()
    stamps = {p: p.stat().st_mtime_ns for p in kernel_objs}

    # another model (int16 activations: other kernels called) on the same board and flags: its own objects and
    # the kernels the first did not compile, none of the first's again
    second = _compiled(scons("board=corstone300", "name=two", "scheme=a16w8", *args).stdout)
    used2 = _kernels_of(tmp_path / "corstone300" / "two-a16w8")
    new = sorted(f"{shared / key}/obj/kernels/{k}.o" for k in used2 if k not in used)
    assert new, "the a16w8 model calls int16 kernels digits int8 does not"
    assert sorted(second) == sorted([f"{tmp_path}/corstone300/two-a16w8/obj/model/model.o",
                                     f"{tmp_path}/corstone300/two-a16w8/obj/model/model_constants.o",
                                     f"{tmp_path}/corstone300/two-a16w8/obj/runtime/main.o", *new]), second
    assert (tmp_path / "corstone300" / "two-a16w8" / "firmware.elf").is_file()
    assert {p: p.stat().st_mtime_ns for p in kernel_objs} == stamps

    # another flag set: its own folder, the kernels the model uses compiled there, the first set untouched
    third = _compiled(scons("board=corstone300", "name=one", "portable=1", *args).stdout)
    keys = sorted(p.name for p in shared.iterdir())
    assert len(keys) == 2 and key in keys
    other = next(k for k in keys if k != key)
    assert sorted(o.rsplit("/", 1)[1][:-2] for o in third if f"/.objects/{other}/obj/kernels/" in o) == sorted(used)
    assert not any(f"/.objects/{key}/" in o for o in third)
    assert {p: p.stat().st_mtime_ns for p in kernel_objs} == stamps


def test_kernels_used_follows_calls_between_kernels():
    """A model naming a RESCALE kernel links tabula_apply_scale_16 / _32 too (the kernel's source calls them),
    in build-list order; a name that is no kernel (the runtime's, a model's own) adds nothing."""
    from tabula import kernels

    got = kernels_used(["st = tabula_rescale_s32_s8(acc, n, c, 0, zp, m, s, 1, out); tabula_model_run();"])
    assert set(got) == {"tabula_rescale_s32_s8", "tabula_apply_scale_16", "tabula_apply_scale_32"}
    order = [p.stem for p in kernels.sources()]
    assert got == sorted(got, key=order.index)
    assert kernels_used(["tabula_frame_put(x); int tabula_conv2d_s8_foldedX;"]) == []
