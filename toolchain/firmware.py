"""Build one firmware image: board sources + runtime + kernels + generated model sources.

Used from an SConstruct::

    sys.path.insert(0, "toolchain"); from firmware import build_firmware
    elf = build_firmware(Environment(tools=[]), load_board("corstone300"),
                         ["build/corstone300/mlp/model.c"], "build/corstone300/mlp")

Objects go to ``<build_dir>/obj/{board,runtime,kernels,model}/`` so two boards (two build dirs)
never share an object file. Model sources may be paths or SCons nodes (e.g. codegen targets); the
folder of each is on the include path (that is where model.h is found).
"""
from pathlib import Path

from tabula.boards import repo_root, shared_dir

RUNTIME = repo_root() / "firmware_templates" / "runtime"
KERNELS = repo_root() / "firmware_templates" / "kernels"
TOOLPATH = [str(repo_root() / "toolchain")]


def runtime_sources():
    """main.c + protocol (runtime/*.c) and every kernel (runtime/kernels/**/*.c), sorted."""
    return sorted(RUNTIME.glob("*.c")), sorted(KERNELS.rglob("*.c"))


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
    env.Prepend(CPPPATH=model_dirs + [str(RUNTIME), str(KERNELS)])

    runtime, kernels = runtime_sources()
    groups = {
        "board": list(board.sources),
        "runtime": runtime,
        "kernels": kernels,
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
            objects += env.Object(target=target, source=str(src) if isinstance(src, Path) else src)

    program = env.Program(target=str(build_dir / "firmware"), source=objects)
    if board.linker_script is not None:
        env.Depends(program, [str(board.linker_script), str(shared_dir() / "cortex_m_sections.ld")])
    env.Clean(program, str(build_dir / "firmware.map"))
    return program[0]
