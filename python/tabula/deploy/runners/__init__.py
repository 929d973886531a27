"""Runners start firmware somewhere and hand back a Link to it; one module per runner.

A runner module exposes ``NAME`` and a ``Runner`` class, a subclass of the one base class
:class:`tabula.deploy.runners._process.Runner` (start/wait/stop/describe, the log, and child processes
that end with this one)::

    runner = Runner(log_path=None)
    with runner.start(elf_path, board) as link:   # board: tabula.boards.Board or None
        ...                                       # run_session(link, ...)
        code = runner.wait(timeout_s)             # the firmware's exit code
    runner.stop()                                 # idempotent; the context exit calls it too

Runners are found by listing this folder: add ``<name>.py`` and ``get_runner("<name>")`` finds it.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def available_runners() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def runner_module(name: str) -> ModuleType:
    names = available_runners()
    if name not in names:
        raise ValueError(f"unknown runner {name!r}; available: {', '.join(names)}")
    module = importlib.import_module(f"{__name__}.{name}")
    if getattr(module, "NAME", None) != name or not hasattr(module, "Runner"):
        raise TypeError(f"runner module {module.__name__} must define NAME = {name!r} and Runner")
    return module


def get_runner(name: str) -> type:
    """The ``Runner`` class of runner ``name`` (e.g. "qemu", "host")."""
    return runner_module(name).Runner
