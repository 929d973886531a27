"""Progress bars for the long stages (calibration, int16 table plans, the float model and the per-layer
analysis over the data, C compiles, device runs): samples done / total, rate and ETA, on stderr.

A bar is shown only where someone watches: stderr is a terminal, ``$TERM`` is not ``dumb``, and neither
``--quiet`` (the CLI sets ``$TABULA_QUIET=1`` for itself and the stages it starts) nor ``quiet=1``
(SCons) asked for silence; ``$TABULA_PROGRESS=1`` forces bars on, ``0`` off.  CI logs (a pipe, a file)
get none.  Bars clear their line when done (tqdm ``leave=False``), so SCons's own lines stay readable.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

__all__ = ["enabled", "bar", "iterate", "QUIET_ENV", "PROGRESS_ENV", "CompileProgress"]

QUIET_ENV = "TABULA_QUIET"
PROGRESS_ENV = "TABULA_PROGRESS"


def enabled(stream=None) -> bool:
    """Whether a progress bar should be drawn on ``stream`` (default ``sys.stderr``): see the module
    docstring."""
    forced = os.environ.get(PROGRESS_ENV, "")
    if forced in ("0", "1"):
        return forced == "1"
    if os.environ.get(QUIET_ENV, "") not in ("", "0"):
        return False
    stream = sys.stderr if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or foreign stream
        return False
    return bool(tty) and os.environ.get("TERM", "") != "dumb"


class _Off:
    """What :func:`bar` gives when no bar is shown: the same methods, doing nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def clear(self) -> None:
        pass

    def close(self) -> None:
        pass


@contextmanager
def bar(total: int | None, desc: str, unit: str = "it", stream=None):
    """A tqdm bar of ``total`` steps labelled ``desc`` (``unit`` per step) on ``stream`` (stderr), or an
    object with the same ``update``/``close`` that draws nothing (:func:`enabled`).  Bars of fewer than
    two steps are not drawn."""
    stream = sys.stderr if stream is None else stream
    if not enabled(stream) or (total is not None and total < 2):
        yield _Off()
        return
    from tqdm import tqdm

    try:  # a terminal that reports no size (a bare pty) would make tqdm draw nothing
        size = os.get_terminal_size(stream.fileno())
        size = (size.columns, size.lines) if size.columns > 0 and size.lines > 1 else None
    except (OSError, ValueError, AttributeError):
        size = None
    t = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False, mininterval=0.2,
             **({"dynamic_ncols": True} if size else {"ncols": 80, "nrows": 24}))
    try:
        yield t
    finally:
        t.close()


def iterate(items, desc: str, unit: str = "it", total: int | None = None):
    """``items`` one by one, with a bar (:func:`bar`) advancing per item."""
    if total is None:
        try:
            total = len(items)
        except TypeError:
            total = None
    with bar(total, desc, unit) as b:
        for item in items:
            yield item
            b.update()


class CompileProgress:
    """SCons's ``Progress`` callable for a firmware build: one bar over the object files of the
    build (``objects``: their paths), advanced as SCons reaches each (built or up to date) and closed
    when it reaches ``program`` (the ELF), so the link line prints on a clean line.  While it is shown
    the compile commands are not echoed (``toolchain/argv_actions.py``); their errors still are."""

    def __init__(self, objects: list[str] | None = None, program: str | None = None):
        self.objects = set(objects or [])
        self.program = program
        self.seen: set[str] = set()
        self._cm = None
        self._bar = None

    def watch(self, objects: list[str], program: str) -> None:
        """Count ``objects`` (paths) and close at ``program``."""
        self.objects, self.program = set(objects), program

    def print_cmd_line(self, s: str, target, source, env) -> None:
        """SCons's ``PRINT_CMD_LINE_FUNC``: clear the bar's line, then print the command as SCons would."""
        self.clear()
        sys.stdout.write(s + "\n")
        sys.stdout.flush()

    def __call__(self, node) -> None:
        path = str(node)
        if path in self.objects and path not in self.seen:
            if self._bar is None:
                self._cm = bar(len(self.objects), "compile", "obj")
                self._bar = self._cm.__enter__()
            self.seen.add(path)
            self._bar.update()
        elif path == self.program:
            self.close()

    def clear(self) -> None:
        if self._bar is not None:
            self._bar.clear()

    def close(self) -> None:
        if self._cm is not None:
            self._cm.__exit__(None, None, None)
            self._cm = self._bar = None
