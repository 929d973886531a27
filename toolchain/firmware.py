"""Build one firmware image: board sources + runtime + kernels + generated model sources.

Used from an SConstruct::

    sys.path.insert(0, "toolchain"); from firmware import build_firmware
    elf = build_firmware(Environment(tools=[]), load_board("corstone300"),
                         ["build/corstone300/mlp/model.c"], "build/corstone300/mlp")

The kernels come from their manifest (``firmware_templates/kernels/manifest.toml``, read by
:mod:`tabula.kernels`): the public header ``tabula_kernels.h`` is generated into
``<build_dir>/include/`` (an SCons target: rebuilt when the manifest or its generator changes) and
the kernel sources are the manifest's build list.  The linker script's memory part
``<build_dir>/ld/tabula_memory.ld`` (MEMORY, CODE/RAM, stack and heap sizes, the sections of
constants and arena placed in other regions) is generated from the board's ``board.toml [memory]``
by :func:`tabula.memory.linker_script`; the board's ``linker.ld`` INCLUDEs it.  Objects go to
``<build_dir>/obj/{board,runtime,kernels,model}/`` so two boards (two build dirs) never share an
object file. Objects carry no absolute path (:func:`reproducible_flags`). The compiler and the linker
get their arguments as lists, never through a shell (``toolchain/argv_actions.py``). Model sources may be paths or SCons nodes (e.g. codegen targets); the folder of each is
on the include path (that is where model.h is found).
"""
import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # the tools import argv_actions beside them
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import argv_actions  # noqa: E402

from tabula import dtypes, kernels, memory  # noqa: E402
from tabula.boards import repo_root, shared_dir

RUNTIME = repo_root() / "firmware_templates" / "runtime"
TOOLPATH = [str(repo_root() / "toolchain")]


def runtime_sources():
    """main.c + protocol (runtime/*.c), sorted, and every kernel source (the manifest's build list)."""
    return sorted(RUNTIME.glob("*.c")), kernels.sources()


def _write_kernels_header(target, source, env):
    kernels.write_header(target[0].get_abspath())
    return 0


def kernels_header(env, build_dir):
    """The SCons node of ``<build_dir>/include/tabula_kernels.h``, generated from the manifest."""
    generator = [kernels.manifest_path(), Path(kernels.__file__), Path(dtypes.__file__)]
    return env.Command(str(Path(str(build_dir)) / "include" / kernels.HEADER_NAME), [str(p) for p in generator],
                       env.Action(_write_kernels_header, "generating $TARGET"))[0]


def _write_memory_script(target, source, env):
    board = env["TABULA_BOARD"]
    Path(target[0].get_abspath()).write_text(
        memory.linker_script(board.memory, f"boards/{board.name}/board.toml"))
    return 0


def memory_script(env, board, build_dir):
    """The SCons node of ``<build_dir>/ld/tabula_memory.ld``, generated from ``board.toml [memory]``
    (rebuilt when board.toml or its generator changes)."""
    sources = [str(board.dir / "board.toml"), memory.__file__]
    return env.Command(str(Path(str(build_dir)) / "ld" / "tabula_memory.ld"), sources,
                       env.Action(_write_memory_script, "generating $TARGET"))[0]


def reproducible_flags(build_abspath):
    """Compiler flags that keep the checkout's and the build folder's absolute paths out of the objects
    (debug info, ``__FILE__``): the same commit gives a byte-identical ELF wherever it is checked out
    and whatever ``build_dir`` is.  GCC applies the last matching map, so the build folder (which may
    lie inside the checkout) comes second."""
    return [f"-ffile-prefix-map={repo_root()}=.", f"-ffile-prefix-map={build_abspath}=build"]


def build_firmware(env, board, model_sources, build_dir):
    """Returns the program node: ``<build_dir>/firmware.elf`` (``firmware`` for the host)."""
    if env.get("TABULA_TOOL_BOARD") != board.name:
        env = env.Clone(TABULA_BOARD=board)
        env.Tool(board.toolchain, toolpath=TOOLPATH)
    else:
        env = env.Clone()
    build_dir = Path(str(build_dir))
    model_nodes = [env.File(str(s)) if not hasattr(s, "get_abspath") else s for s in model_sources]
    model_dirs = []
    for node in model_nodes:
        if node.dir not in model_dirs:
            model_dirs.append(node.dir)
    header = kernels_header(env, build_dir)
    env.Append(CCFLAGS=reproducible_flags(env.Dir(str(build_dir)).get_abspath()))
    env.Prepend(CPPPATH=model_dirs + [header.dir, str(RUNTIME), str(kernels.kernels_dir())])

    runtime, kernel_sources = runtime_sources()
    groups = {
        "board": list(board.sources),
        "runtime": runtime,
        "kernels": kernel_sources,
        "model": [n for n in model_nodes if str(n).endswith(".c")],
    }
    objects = []
    for group, sources in groups.items():
        seen = set()
        for src in sources:
            stem = Path(str(src)).stem
            name, k = stem, 1
            while name in seen:                      # same file name from two folders
                name, k = f"{stem}_{k}", k + 1
            seen.add(name)
            target = str(build_dir / "obj" / group / (name + env.subst("$OBJSUFFIX")))
            objects += argv_actions.c_object(env, target, str(src) if isinstance(src, Path) else src)

    if board.linker_script is not None:
        ld = memory_script(env, board, build_dir)
        env.Append(LINKFLAGS=["-L" + ld.dir.get_abspath()])
    program = argv_actions.program(env, str(build_dir / "firmware"), objects)
    if board.linker_script is not None:
        env.Depends(program, [str(board.linker_script), str(shared_dir() / "cortex_m_sections.ld"), ld])
    env.Clean(program, str(build_dir / "firmware.map"))
    return program[0]
