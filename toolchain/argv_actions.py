"""SCons actions that run programs from argument vectors, never from shell strings.

SCons's own command actions substitute ``$`` variables inside every string and hand the result to
``sh -c``; its POSIX escaping leaves backticks and ``$(...)`` alone, so a model file named
``g`touch X`.pt2`` (or a ``build_dir`` with a ``;``) ran a command at the first compile.  Here every
path reaches its program as one element of ``argv`` (:mod:`tabula.procs`: no shell, and the child is
tied to the SCons process, so a killed build leaves no compiler, stage or emulator behind):

- :func:`command` -- a Python function action running ``argv``, whose items are strings (taken as
  they are, ``$`` included) or placeholders for the target and source nodes (:data:`SOURCE`,
  :data:`TARGET_DIR`, ...) rendered as SCons renders them (relative to the top folder when inside it);
- :func:`c_object` and :func:`program` -- the compile and link steps of a firmware build, the same
  argument lists SCons's ``CCCOM`` / ``LINKCOM`` produce (``$CC -o $TARGET -c $CFLAGS $CCFLAGS
  -D... -I... $SOURCE``), so the objects and the ELF are byte for byte what they were; a link that
  overflows a memory region still ends in one ``tabula: error:`` line (:func:`tabula.memory.linker_overflow_line`).
- :func:`install` -- an SCons ``SPAWN`` that runs whatever command action is left without a shell.

An action's signature (what makes SCons rebuild) is its argument list with the node paths left out,
plus the source and target nodes SCons tracks anyway; include paths are left out as SCons's
``$( $)`` leaves them out of ``CCCOM``'s.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sys

import SCons.Action
import SCons.Builder
import SCons.Scanner
import SCons.Tool

from tabula import procs, status

MAP_FLAG = "-Wl,-Map=${TARGET.base}.map"
"""The linker map flag in ``LINKFLAGS``; :func:`program` puts the target's path in (no SCons substitution)."""


class _Node:
    """A placeholder in an argument list: source or target ``index``, its path or its folder's."""

    def __init__(self, kind: str, index: int = 0, folder: bool = False, prefix: str = ""):
        self.kind, self.index, self.folder, self.prefix = kind, index, folder, prefix

    def __call__(self, index: int = 0, prefix: str = "") -> "_Node":
        return _Node(self.kind, index, self.folder, prefix)

    def render(self, target, source) -> str:
        node = (target if self.kind == "target" else source)[self.index]
        return self.prefix + path_of(node.dir if self.folder else node)

    def __repr__(self) -> str:  # the signature: which node, never its path
        return f"<{self.kind}[{self.index}]{'.dir' if self.folder else ''}{self.prefix}>"


SOURCE = _Node("source")
"""``SOURCE(i)``: the path of source node ``i`` (``SOURCE`` alone: source 0)."""
SOURCE_DIR = _Node("source", folder=True)
TARGET = _Node("target")
TARGET_DIR = _Node("target", folder=True)


def path_of(node) -> str:
    """A node's path as SCons writes it in a command (relative to the top folder when inside it), made
    safe as an argument: a path starting with ``-`` gets ``./`` so no program reads it as an option."""
    p = str(node)
    return "./" + p if p.startswith("-") else p


def render(argv, target, source) -> list[str]:
    return [a.render(target, source) if isinstance(a, _Node) else os.fspath(a) for a in argv]


def _display(argv: list[str]) -> str:
    return shlex.join(argv)


def _signature(items) -> str:
    return hashlib.sha256(repr(list(items)).encode("utf-8", "surrogateescape")).hexdigest()


def _env_vars(env) -> dict:
    return {str(k): str(v) for k, v in env["ENV"].items()}


def _top(env) -> str:
    return env.Dir("#").abspath


def _execute(argv: list[str], env, capture: bool = False):
    """Run ``argv`` in the top folder with the build's environment; returns (exit code, output)."""
    try:
        if capture:
            p = procs.run(argv, env=_env_vars(env), cwd=_top(env), capture_output=True, text=True)
            return p.returncode, (p.stdout or "") + (p.stderr or ""), p
        with procs.popen(argv, env=_env_vars(env), cwd=_top(env)) as p:
            return p.wait(), "", None
    except OSError as e:
        print(f"scons: cannot run {argv[0]}: {e.strerror or e}", file=sys.stderr)
        return 127, "", None


# ---- Python stages and scripts --------------------------------------------------------------------

def _run_command(target, source, env):
    argv = render(env["TABULA_ARGV"], target, source)
    code, _, _ = _execute(argv, env)
    if code:  # after the stage's own record (tabula.cli writes one): the consequence, not the cause
        status.record("scons", error=f"{' '.join(argv[:4])} ... exited with {code} (its output is above)",
                      target=path_of(target[0]), exit_code=code)
    return code


def _show_command(target, source, env):
    return _display(render(env["TABULA_ARGV"], target, source))


_COMMAND = SCons.Action.Action(_run_command, _show_command, varlist=["TABULA_ARGV_SIG"])


def command(env, targets, sources, argv, **overrides):
    """``env.Command(targets, sources, ...)`` running ``argv`` (strings and node placeholders) with no
    shell.  ``overrides`` go to the builder's environment as with ``env.Command``."""
    return env.Command(targets, sources, _COMMAND, TABULA_ARGV=list(argv), TABULA_ARGV_SIG=_signature(argv),
                       **overrides)


def action(argv):
    """A function action (for ``env.Alias`` and the like) running ``argv`` with no shell."""
    argv = list(argv)
    return SCons.Action.Action(lambda target, source, env: _execute(render(argv, target, source), env)[0],
                               lambda target, source, env: _display(render(argv, target, source)))


# ---- compile and link -------------------------------------------------------------------------------

def _flat(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        return [value] if value else []
    out = []
    for v in value:
        out += _flat(v)
    return out


def _define(d) -> str:
    if isinstance(d, (tuple, list)):
        k, v = d[0], (d[1] if len(d) > 1 else None)
        return f"-D{k}" if v is None else f"-D{k}={v}"
    return f"-D{d}"


def _defines(env) -> list[str]:
    defs = env.get("CPPDEFINES") or []
    if isinstance(defs, dict):
        defs = sorted(defs.items())
    elif isinstance(defs, str):
        defs = [defs]
    return [_define(d) for d in defs]


def _includes(env) -> list[str]:
    out = []
    for p in env.get("CPPPATH") or []:
        node = p if hasattr(p, "get_abspath") else env.Dir(str(p))
        out.append("-I" + path_of(node))
    return out


def compile_argv(env, target, source) -> list[str]:
    """``$CC -o $TARGET -c $CFLAGS $CCFLAGS -D<defines> -I<CPPPATH> $SOURCE`` as a list."""
    return [env["CC"], "-o", path_of(target[0]), "-c", *_flat(env.get("CFLAGS")), *_flat(env.get("CCFLAGS")),
            *_defines(env), *_includes(env), *[path_of(s) for s in source]]


def _scanned_texts(source) -> list[str]:
    """The text of each C source of a link (what :func:`program`'s ``kernels`` reads), once they exist."""
    return [s.get_text_contents() for s in source if path_of(s).endswith(".c") and s.exists()]


def _linked_kernels(env, source) -> list:
    """The object nodes of the kernels a link's C sources name (``TABULA_KERNELS``, :func:`program`)."""
    pick = env.get("TABULA_KERNELS")
    return list(pick(_scanned_texts(source))) if pick is not None else []


def link_argv(env, target, source) -> list[str]:
    """``$LINK -o $TARGET $LINKFLAGS $SOURCES``, the map flag pointing beside the target; a C source among
    the sources (see :func:`program`) stands for the kernel objects it names: they are linked in its place
    (all of them at the first), in build-list order."""
    base = os.path.splitext(path_of(target[0]))[0]
    flags = [f.replace("${TARGET.base}", base) if f == MAP_FLAG else f for f in _flat(env.get("LINKFLAGS"))]
    paths, placed = [], False
    for s in source:
        if not path_of(s).endswith(".c"):
            paths.append(path_of(s))
        elif not placed:
            paths += [path_of(k) for k in _linked_kernels(env, source)]
            placed = True
    return [env["LINK"], "-o", path_of(target[0]), *flags, *paths]


def _first_error(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "no output")


def _compile(target, source, env):
    code, out, p = _execute(compile_argv(env, target, source), env, capture=True)
    if _QUIET_COMPILES[0] and (code or (p is not None and (p.stdout or p.stderr))):
        sys.stderr.write("\r\033[K" + _display(compile_argv(env, target, source)) + "\n")  # the bar's line first
    if p is not None:
        sys.stdout.write(p.stdout or "")
        sys.stderr.write(p.stderr or "")
    if code:
        status.record("compile", error=f"compiling {path_of(source[0])} failed: {_first_error(out)}", exit_code=code)
    return code


def _link(target, source, env):
    argv = link_argv(env, target, source)
    memory_map = env.get("TABULA_MEMORY_MAP")
    code, out, p = _execute(argv, env, capture=True)
    if p is None:
        return code
    sys.stdout.write(p.stdout or "")
    line = None
    if code and memory_map is not None:
        from tabula.memory import linker_overflow_line

        line = linker_overflow_line(out, memory_map)
    if line is None:
        sys.stderr.write(p.stderr or "")
    else:
        print(f"tabula: error: {line}", file=sys.stderr)
    if code:
        status.record("link", error=line or f"linking {path_of(target[0])} failed: {_first_error(out)}", exit_code=code)
    return code


_QUIET_COMPILES = [False]


def quiet_compiles(on: bool) -> None:
    """Whether compile commands are echoed: off while a progress bar counts the objects instead
    (:class:`tabula.progress.CompileProgress`, on a terminal); a failing compile's output still prints."""
    _QUIET_COMPILES[0] = bool(on)


def _show_compile(target, source, env):
    return None if _QUIET_COMPILES[0] else _display(compile_argv(env, target, source))


_COMPILE = SCons.Action.Action(_compile, _show_compile, varlist=["TABULA_CC_SIG"])
_LINK = SCons.Action.Action(_link, lambda t, s, env: _display(link_argv(env, t, s)), varlist=["TABULA_LINK_SIG"])
_OBJECT = SCons.Builder.Builder(action=_COMPILE, suffix="$OBJSUFFIX", src_suffix=".c",
                                source_scanner=SCons.Tool.CScanner)


def _scan_kernels(node, env, path):
    """The program's source scanner: a C source (the generated model.c, once written) depends on the kernel
    objects it names, so SCons builds just those, after the C source exists (it scans again once it is built)."""
    if not str(node).endswith(".c") or not node.exists():
        return []
    return _linked_kernels(env, [node])


_PROGRAM = SCons.Builder.Builder(action=_LINK, suffix="$PROGSUFFIX", src_suffix="$OBJSUFFIX",
                                 source_scanner=SCons.Scanner.Scanner(function=_scan_kernels, name="tabula_kernels"))


def _tool_id(program: str) -> str:
    return shutil.which(program) or program


def c_object(env, target: str, source):
    """Compile one C file into ``target`` (an argument list; header dependencies from SCons's C scanner)."""
    sig = _signature([_tool_id(env["CC"]), _flat(env.get("CFLAGS")), _flat(env.get("CCFLAGS")), _defines(env)])
    return _OBJECT(env, target=target, source=source, TABULA_CC_SIG=sig)


def program(env, target: str, objects, kernels=None):
    """Link ``objects`` into ``target`` (``$PROGSUFFIX`` added) as an argument list.  ``kernels``: a function
    from C texts to the object nodes of the kernels they name; the C sources among ``objects`` are then not
    linked but read: each stands for ``kernels([its text])``, so only the kernels a model calls are compiled
    (on demand, once its C is generated) and linked."""
    sig = _signature([_tool_id(env["LINK"]), _flat(env.get("LINKFLAGS"))])
    return _PROGRAM(env, target=target, source=objects, TABULA_LINK_SIG=sig, TABULA_KERNELS=kernels)


# ---- whatever command action is left: no shell either -------------------------------------------------

def spawn(sh, escape, cmd, args, env):
    """SCons ``SPAWN``: run ``args`` as they are, with no shell (a command string action still works
    for ordinary arguments; nothing in it is ever interpreted by ``sh``)."""
    try:
        with procs.popen(list(args), env={str(k): str(v) for k, v in env.items()}) as p:
            return p.wait()
    except OSError as e:
        print(f"scons: cannot run {args[0]}: {e.strerror or e}", file=sys.stderr)
        return 127


def pspawn(sh, escape, cmd, args, env, stdout, stderr):
    try:
        with procs.popen(list(args), env={str(k): str(v) for k, v in env.items()}, stdout=stdout,
                         stderr=stderr) as p:
            return p.wait()
    except OSError as e:
        stderr.write(f"scons: cannot run {args[0]}: {e.strerror or e}\n")
        return 127


def install(env) -> None:
    """Make ``env`` (and its clones) run command actions without a shell."""
    env["SPAWN"] = spawn
    env["PSPAWN"] = pspawn
    env["ESCAPE"] = lambda arg: arg


__all__ = ["command", "action", "c_object", "program", "compile_argv", "link_argv", "install", "SOURCE",
           "SOURCE_DIR", "TARGET", "TARGET_DIR", "MAP_FLAG"]
