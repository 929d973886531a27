"""Child processes: started from an argument vector (never a shell string), and ended with their parent.

Every program tabula starts -- the compiler and linker under SCons, the stages SCons runs, QEMU, the
FVP, the host firmware, pyocd -- goes through :func:`popen` (or :func:`run`): ``argv`` is a list, so no
character of a path or a name (a backtick, ``$(``, ``;``, a quote, a newline) is ever read by a shell.
On Linux the child also asks the kernel for ``SIGKILL`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``
in a ``preexec_fn``): a tabula process or an SCons build that is killed (``kill -9``, its process group,
a closed CI job) takes its emulator with it instead of leaving it spinning.  Chained, this covers the
whole tree: SCons -> ``tabula run`` -> QEMU.

The kernel sends the signal when the *thread* that started the child ends, so start long-lived children
from a thread that outlives them (the main thread, or SCons's job threads, which live for the build).
Elsewhere (no ``prctl``) the children still get their own process group where asked, which
:meth:`tabula.deploy.runners._process.Runner.stop` ends.

A leaf module: only the standard library.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from typing import Callable, Sequence

__all__ = ["popen", "run", "tie_to_parent", "DEATH_SIGNAL"]

PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = signal.SIGKILL
"""What a child gets when its parent dies: SIGKILL, which no emulator can ignore or delay."""


def _prctl():
    """libc's ``prctl``, resolved before any fork (the child only calls it), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


_PRCTL = _prctl()


def tie_to_parent(sig: int = DEATH_SIGNAL) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive ``sig`` when this process (the thread calling
    this) dies, and exit at once if this process died before the child could ask; None where the
    platform has no ``prctl`` (the child then lives on its own)."""
    if _PRCTL is None:
        return None
    parent, prctl = os.getpid(), _PRCTL

    def preexec() -> None:  # runs in the child between fork and exec: no allocation-heavy work here
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent is already gone: the signal would never come
            os._exit(1)

    return preexec


def popen(argv: Sequence[str | os.PathLike], *, own_group: bool = False, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen(argv)`` with no shell, tied to this process (:func:`tie_to_parent`).

    ``own_group``: start the child in a new session (its own process group), so that ``os.killpg``
    ends it and whatever it starts, and a Ctrl-C meant for the build does not reach it mid-frame.

    Raises:
        TypeError: ``argv`` is a string (a shell command line): pass a list of arguments.
        OSError: the program cannot be started (not found, not executable).
    """
    if isinstance(argv, (str, bytes)):
        raise TypeError("popen takes an argument vector (a list), never a shell command string")
    if kwargs.get("shell"):
        raise TypeError("popen never runs a shell")
    return subprocess.Popen([os.fspath(a) for a in argv], preexec_fn=tie_to_parent(), start_new_session=own_group,
                            **kwargs)


def run(argv: Sequence[str | os.PathLike], *, timeout: float | None = None, own_group: bool = False,
        **kwargs) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(argv)`` through :func:`popen`: no shell, tied to this process, and on
    ``timeout`` (seconds) the child -- its whole group with ``own_group`` -- is killed before
    ``subprocess.TimeoutExpired`` is raised."""
    capture = kwargs.pop("capture_output", False)
    if capture:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
    text_in = kwargs.pop("input", None)
    if text_in is not None:
        kwargs.setdefault("stdin", subprocess.PIPE)
    with popen(argv, own_group=own_group, **kwargs) as p:
        try:
            out, err = p.communicate(text_in, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(p, own_group)
            p.communicate()
            raise
        except BaseException:  # KeyboardInterrupt: the child must not outlive us
            _kill(p, own_group)
            raise
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _kill(p: subprocess.Popen, group: bool) -> None:
    try:
        if group:
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.kill()
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()
