"""A host firmware for many small programs, fast: the kernels, the host board's C and the protocol are
compiled once into ``<cache>/obj-<digest>/``; each program then compiles only its generated ``model.c`` (and
``model_constants.S``, the large constant arrays as bytes, when codegen wrote one) and the runtime's ``main.c`` (which includes that program's ``model.h``) and links.  The flags are the host board's, as
``toolchain/host_gcc.py`` gives them to SCons (``tabula.boards``' common flags, the board's own, its name and
tick rate), so the executable is the one ``scons board=host`` builds from the same sources, up to the debug-path
maps SCons adds for reproducible objects.  For benchmarks that build a hundred one-op models
(``benchmarks/op_coverage.py``), where SCons would compile the 80-odd kernel files for each."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from _bench import ROOT  # noqa: F401  (puts this checkout's python/ on sys.path)

from tabula import kernels
from tabula.boards import C_STD, COMMON_CFLAGS, COMMON_LINKFLAGS, load_board

RUNTIME = ROOT / "firmware_templates" / "runtime"


def _cc() -> str:
    return os.environ.get("TABULA_HOST_CC", "gcc")


def _flags(include: Path) -> list[str]:
    board = load_board("host")
    return [C_STD, *COMMON_CFLAGS, *board.cflags, f'-DTABULA_BOARD_NAME="{board.name}"',
            f"-DTABULA_BOARD_TICK_HZ={board.tick_hz}u", "-I", str(include), "-I", str(RUNTIME),
            "-I", str(kernels.kernels_dir())]


def _compile(src: Path, obj: Path, flags: list[str]) -> None:
    obj.parent.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([_cc(), *flags, "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"compiling {src.name} failed:\n{p.stderr[-3000:]}")


def _digest(flags: list[str]) -> str:
    """A digest of every file the shared objects are made from (the kernels' folder with its headers, the runtime,
    the host board, the manifest and its generator) and of the flags: a change anywhere makes a new object folder."""
    h = hashlib.sha256(" ".join(flags).encode())
    board = load_board("host")
    files = [*sorted(p for d in (kernels.kernels_dir(), RUNTIME, board.dir) for p in Path(d).rglob("*") if p.is_file()),
             kernels.manifest_path(), Path(kernels.__file__)]
    for p in files:
        h.update(str(p).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def shared_objects(cache: Path) -> list[Path]:
    """The objects every program links (kernels, the host board's C, the protocol), compiled once into
    ``cache/obj-<digest>/`` (:func:`_digest`: new sources or flags, a new folder) with the generated kernel
    header beside them."""
    probe = _flags(Path("include"))
    folder = cache / f"obj-{_digest(probe)}"
    include = folder / "include"
    flags = _flags(include)
    board = load_board("host")
    sources = [*board.sources, RUNTIME / "tabula_protocol.c", *kernels.sources()]
    objects = [folder / (Path(src).stem + ".o") for src in sources]
    if not all(o.is_file() for o in objects):
        kernels.write_header(include / kernels.HEADER_NAME)
        for src, obj in zip(sources, objects):
            _compile(Path(src), obj, flags)
    return objects


def build(src_dir: Path, cache: Path) -> Path:
    """``src_dir/firmware``: ``src_dir``'s ``model.c`` and the runtime's ``main.c`` (with ``src_dir``'s
    ``model.h``) linked with :func:`shared_objects`; raises with the compiler's output on failure."""
    objects = shared_objects(cache)
    flags = ["-I", str(src_dir), *_flags(objects[0].parent / "include")]
    own = [src_dir / "model.o", src_dir / "main.o"]
    _compile(src_dir / "model.c", own[0], flags)
    _compile(RUNTIME / "main.c", own[1], flags)
    if (src_dir / "model_constants.S").is_file():  # the large constant arrays, .incbin'd from model_constants.bin
        own.append(src_dir / "model_constants.o")
        _compile(src_dir / "model_constants.S", own[-1], flags)
    elf = src_dir / "firmware"
    board = load_board("host")
    p = subprocess.run([_cc(), *board.ldflags, *COMMON_LINKFLAGS, "-o", str(elf), *map(str, own + objects)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"linking {elf} failed:\n{p.stderr[-3000:]}")
    return elf
