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
object file; with ``shared_objects`` (SConstruct: ``<build_dir>/<board>/.objects/``) the board, runtime and
kernel objects go to ``<shared_objects>/<flags_key>/obj/`` instead and every model of the board links them. Objects carry no absolute path (:func:`reproducible_flags`). The compiler and the linker
get their arguments as lists, never through a shell (``toolchain/argv_actions.py``). Model sources may be paths or SCons nodes (e.g. codegen targets); the folder of each is
on the include path (that is where model.h is found, and what ``.incbin`` reads); ``.c`` and ``.S`` ones are
compiled, any other (``model_constants.bin``) is a dependency of the ``.S`` objects.
"""
import re
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


_KERNEL_WORD = re.compile(r"\btabula_[a-z0-9_]+\b")
_INCLUDE = re.compile(r'#\s*include\s+"([^"]+)"')
_KERNEL_DEPS: dict[str, tuple[str, ...]] = {}


def _kernel_deps() -> dict[str, tuple[str, ...]]:
    """Kernel name -> the kernels its object needs (itself first, then every manifest kernel named in its
    source or in the kernel headers it includes, transitively): a textual over-approximation (a name in a
    comment counts), so a link never misses one.  Computed once per SCons run from the sources on disk."""
    if _KERNEL_DEPS:
        return _KERNEL_DEPS
    kdir = kernels.kernels_dir()
    headers = {p.name: p for p in kdir.rglob("*.h")}
    names = set(kernels.names())
    texts: dict[Path, str] = {}

    def closure_text(path: Path, seen: set) -> str:
        if path in seen:
            return ""
        seen.add(path)
        text = texts.setdefault(path, path.read_text(errors="replace"))
        parts = [text]
        for inc in _INCLUDE.findall(text):
            q = path.parent / inc
            q = q if q.is_file() else headers.get(Path(inc).name)
            if q is not None:
                parts.append(closure_text(q, seen))
        return "\n".join(parts)

    direct = {src.stem: set(_KERNEL_WORD.findall(closure_text(src, set()))) & names for src in kernels.sources()}
    for name in direct:
        todo, found = [name], [name]
        while todo:
            for dep in sorted(direct.get(todo.pop(), ())):
                if dep not in found:
                    found.append(dep)
                    todo.append(dep)
        _KERNEL_DEPS[name] = tuple(found)
    return _KERNEL_DEPS


def kernels_used(texts) -> list[str]:
    """The manifest kernels a firmware links, in build-list order: every kernel named in ``texts`` (the model's
    generated C, an NPU build's glue), with the kernels those need (:func:`_kernel_deps`)."""
    deps = _kernel_deps()
    wanted: set[str] = set()
    for text in texts:
        for word in set(_KERNEL_WORD.findall(text)):
            wanted.update(deps.get(word, ()))
    return [src.stem for src in kernels.sources() if src.stem in wanted]


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


#: The test-only Ethos-U driver stand-in (npu_driver=standin): tabula's own code, tests/fixtures/ethosu_standin/.
STANDIN = repo_root() / "tests" / "fixtures" / "ethosu_standin"
#: What an NPU build needs when no driver is given (one line: what to get and where to point it).
DRIVER_MISSING = ("this NPU build needs Arm's Ethos-U core driver (Apache-2.0): git clone "
                  "https://github.com/ARM-software/ethos-u-core-driver and give ethosu_driver=<that folder> (or set "
                  "$ETHOSU_DRIVER); on QEMU, which has no NPU, build the test-only stand-in with npu_driver=standin")


def npu_sources(cfg, driver: str, driver_path: str = "", cmsis_path: str = ""):
    """``(extra_sources, include dirs, defines)`` of an NPU build (``cfg``: a :class:`tabula.npu.NpuConfig`):
    tabula's glue (``firmware_templates/runtime/npu/``) and either Arm's core driver from ``driver_path``
    (``src/ethosu_driver.c``, ``ethosu_pmu.c`` and the family's ``ethosu_device_*.c``; ``include/`` and
    ``src/`` on the include path; ``cmsis_path``'s CMSIS-Core headers when the driver includes
    ``cmsis_compiler.h``) or, for ``driver == "standin"``, the test-only stand-in.  The defines carry
    board.toml ``[npu]``: ``TABULA_NPU_BASE``, ``TABULA_NPU_IRQ``, ``TABULA_NPU_SECURE``,
    ``TABULA_NPU_PRIVILEGED``, and the driver's ``ETHOSU55`` / ``ETHOSU65`` / ``ETHOSU85``.

    Raises:
        ValueError: no driver (the one line :data:`DRIVER_MISSING`), or a folder that is not the driver's
            or lacks the CMSIS headers it needs (the message says what to point where).
    """
    glue = RUNTIME / "npu"
    defines = [("TABULA_NPU_BASE", "0x%08xu" % cfg.base), ("TABULA_NPU_IRQ", "%du" % cfg.irq),
               ("TABULA_NPU_SECURE", "%du" % cfg.secure), ("TABULA_NPU_PRIVILEGED", "%du" % cfg.privileged)]
    if driver == "standin":
        return ({"npu": [glue / "tabula_npu.c"], "standin": [STANDIN / "ethosu_standin.c"]},
                [str(glue), str(STANDIN), str(STANDIN / "include")], defines)
    if not driver_path:
        raise ValueError(DRIVER_MISSING)
    root = Path(driver_path).expanduser().resolve()
    core = [root / "src" / "ethosu_driver.c", root / "include" / "ethosu_driver.h"]
    if not all(p.is_file() for p in core):
        raise ValueError(f"ethosu_driver={driver_path} is not the Ethos-U core driver (no src/ethosu_driver.c and "
                         "include/ethosu_driver.h): point it at a clone of "
                         "https://github.com/ARM-software/ethos-u-core-driver")
    family = cfg.target.family
    device = root / "src" / ("ethosu_device_u85.c" if family == "ethos-u85" else "ethosu_device_u55_u65.c")
    sources = [root / "src" / "ethosu_driver.c"] + [p for p in (device, root / "src" / "ethosu_pmu.c") if p.is_file()]
    path = [str(glue), str(root / "include"), str(root / "src")]
    if any("cmsis_compiler.h" in p.read_text(errors="replace") for p in sources):
        cm = Path(cmsis_path).expanduser().resolve() if cmsis_path else None
        inc = next((d for d in ([cm / "CMSIS" / "Core" / "Include", cm / "Include"] if cm else [])
                    if (d / "cmsis_compiler.h").is_file()), None)
        if inc is None:
            raise ValueError("the Ethos-U driver includes cmsis_compiler.h: git clone https://github.com/ARM-software/"
                             "CMSIS_5 and give cmsis=<that folder> (or set $CMSIS_PATH)")
        path.append(str(inc))
    defines += [{"ethos-u55": "ETHOSU55", "ethos-u65": "ETHOSU65", "ethos-u85": "ETHOSU85"}[family],
                ("ETHOSU_LOG_SEVERITY", "1")]
    return {"npu": [glue / "tabula_npu.c"], "ethosu_driver": sources}, path, defines


#: The groups of objects that depend on the board and its flags only (not on the model): with ``shared_objects``
#: they are compiled once per board and flag set and linked into every model's firmware.  The runtime's
#: ``main.c`` includes ``model.h`` (its buffer sizes), so it stays with the model.
SHARED_GROUPS = ("board", "runtime", "kernels")
MODEL_RUNTIME = ("main.c",)


def flags_key(env) -> str:
    """The folder name of a flag set under ``shared_objects``: a hash of the compiler, its flags and defines
    (as configured before the path-dependent ``-ffile-prefix-map`` flags are added), so a
    build with other flags (``portable=1``, another board's ``-mcpu``) gets its own objects and two flag
    sets never overwrite each other."""
    import hashlib

    parts = [argv_actions._tool_id(env["CC"]), argv_actions._flat(env.get("CFLAGS")),
             argv_actions._flat(env.get("CCFLAGS")), argv_actions._defines(env), argv_actions._flat(env.get("ASFLAGS"))]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def build_firmware(env, board, model_sources, build_dir, extra_sources=None, shared_objects=None):
    """Returns the program node: ``<build_dir>/firmware.elf`` (``firmware`` for the host).
    ``extra_sources``: ``{group: [C sources]}`` more C to link (an NPU build's glue and driver:
    :func:`npu_sources`); the group ``ethosu_driver`` (Arm's code) compiles without ``-Werror``.
    ``shared_objects``: a folder; the objects of :data:`SHARED_GROUPS` (board, the runtime but ``main.c``, every kernel)
    and the generated ``tabula_kernels.h`` go to ``<shared_objects>/<flags_key>/`` instead of ``<build_dir>/obj/``,
    so every model built for the board with the same flags links the same objects and compiles none of
    them again (SCons still rebuilds one whose source or header changed); None: everything under
    ``build_dir``."""
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
    shared = build_dir if shared_objects is None else Path(str(shared_objects)) / flags_key(env)
    header = kernels_header(env, shared)
    # the shared objects' folder maps to "build" as the model's does: the same bytes whatever the folders
    env.Append(CCFLAGS=reproducible_flags(env.Dir(str(shared)).get_abspath()))
    common_env = env.Clone()
    common_env.Prepend(CPPPATH=[header.dir, str(RUNTIME), str(kernels.kernels_dir())])
    if shared_objects is not None:
        env.Append(CCFLAGS=[f"-ffile-prefix-map={env.Dir(str(build_dir)).get_abspath()}=build"])
    env.Prepend(CPPPATH=model_dirs + [header.dir, str(RUNTIME), str(kernels.kernels_dir())])

    runtime, kernel_sources = runtime_sources()
    groups = {
        "board": list(board.sources),
        "runtime": runtime,
        "kernels": kernel_sources,
        "model": [n for n in model_nodes if str(n).endswith((".c", ".S"))],
        **(extra_sources or {}),
    }
    objects = []
    kernel_objects: dict[str, object] = {}  # kernel name -> its object node: linked (so built) only when used
    for group, sources in groups.items():
        own_env = env
        if group == "ethosu_driver":  # third-party code: its warnings are not ours to fail on
            own_env = env.Clone(CCFLAGS=[f for f in env["CCFLAGS"] if f not in ("-Werror", "-Wextra")])
        seen = set()
        for src in sources:
            stem = Path(str(src)).stem
            name, k = stem, 1
            while name in seen:                      # same file name from two folders
                name, k = f"{stem}_{k}", k + 1
            seen.add(name)
            is_shared = (shared_objects is not None and group in SHARED_GROUPS
                         and Path(str(src)).name not in MODEL_RUNTIME)
            genv = common_env if is_shared else own_env
            target = str((shared if is_shared else build_dir) / "obj" / group / (name + env.subst("$OBJSUFFIX")))
            obj = argv_actions.c_object(genv, target, str(src) if isinstance(src, Path) else src)
            if group == "model" and str(src).endswith(".S"):  # what it .incbin's (model_constants.bin)
                env.Depends(obj, [n for n in model_nodes if not str(n).endswith((".c", ".S", ".h"))])
            if group == "kernels":
                kernel_objects[stem] = obj[0]
                if len(kernel_objects) == len(kernel_sources):  # where the kernels go in the link order
                    objects += [env.File(str(c)) if isinstance(c, Path) else c for g, cs in groups.items()
                                if g not in SHARED_GROUPS for c in cs if str(c).endswith(".c")]
                continue
            objects += obj

    if board.linker_script is not None:
        ld = memory_script(env, board, build_dir)
        env.Append(LINKFLAGS=["-L" + ld.dir.get_abspath()])
    program = argv_actions.program(env, str(build_dir / "firmware"), objects,
                                   kernels=lambda texts: [kernel_objects[k] for k in kernels_used(texts)])
    if board.linker_script is not None:
        env.Depends(program, [str(board.linker_script), str(shared_dir() / "cortex_m_sections.ld"), ld])
    env.Clean(program, str(build_dir / "firmware.map"))
    return program[0]
