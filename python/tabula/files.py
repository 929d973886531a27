"""Writing a stage's files: atomically, and with one clear error when the disk is full or read-only;
the folders they go to: plain names, created with one clear error, one build at a time.

A leaf module (only :mod:`tabula.errors`): every stage writes through :func:`write_atomic` (JSON through
:func:`write_json`: sorted keys, so the same content is the same bytes), so a failed write leaves
neither a half-written file nor a ``*.tmp`` beside it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from .errors import StageError

__all__ = ["write_atomic", "tmp_path", "check_folder_name", "folder_name", "check_build_dir", "make_dirs",
           "lock_folder", "write_json", "shown"]


def tmp_path(path: Path) -> Path:
    """The temporary name ``path`` is written under before the rename (same folder, same suffix, so
    numpy's ``savez`` keeps it: ``ir.npz`` -> ``ir.tmp.npz``)."""
    return path.with_name(f"{path.stem}.tmp{path.suffix}") if path.suffix else path.with_name(path.name + ".tmp")


def write_atomic(path: str | Path, data: str | bytes | Callable[[Path], None]) -> Path:
    """Write ``data`` (text, bytes, or a function that writes the file it is given) to a temporary
    name beside ``path``, then rename it to ``path``; returns ``path``.

    Raises:
        StageError: the write failed (disk full, read-only, permissions): the message names the file
            and the cause; the temporary file is removed and ``path`` is left as it was.
    """
    p = Path(path)
    tmp = tmp_path(p)
    try:
        if callable(data):
            data(tmp)
        elif isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
        tmp.replace(p)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise StageError(f"cannot write {p}: {e.strerror or e}; free disk space or write permission there, "
                         "or choose another output folder (build_dir=)") from None
    return p


def write_json(path: str | Path, data, indent: int | None = 1) -> Path:
    """:func:`write_atomic` of ``data`` as JSON with sorted keys and a final newline: the same data is
    always the same bytes (a rebuild that changes nothing changes no file)."""
    return write_atomic(path, json.dumps(data, indent=indent, sort_keys=True) + "\n")


# ---- folders: names, creation, one build at a time -------------------------------------------------

#: Characters a build folder name (``name=`` / ``--name``) may hold besides letters and digits (any script).
NAME_PUNCTUATION = "._-+"


def bad_name_chars(name: str) -> list[str]:
    """The characters of ``name`` a plain folder name may not hold (in order, once each)."""
    bad = []
    for c in name:
        if not (c.isalnum() or c in NAME_PUNCTUATION) and c not in bad:
            bad.append(c)
    return bad


def check_folder_name(name: str, option: str = "name=") -> str:
    """``name`` if it is a plain folder name: letters and digits of any script and ``._-+``, not
    starting with ``.`` or ``-``; returns it.

    Raises:
        StageError: one line naming the option, the characters that are not allowed (shell and SCons
            metacharacters such as a backtick, ``$``, ``;``, quotes, ``/``, spaces, control
            characters) and a name that would do.
    """
    bad = bad_name_chars(name)
    if name and not bad and name[0] not in ".-":
        return name
    what = ("is empty" if not name else
            f"holds {', '.join(repr(c) for c in bad)}" if bad else f"starts with {name[0]!r}")
    raise StageError(f"{option}{name!r} is not a plain folder name (it {what}): use letters, digits and "
                     f"'{NAME_PUNCTUATION}' (every file goes into <build_dir>/<board>/<name>), e.g. "
                     f"{option}{folder_name(name)}")


def folder_name(stem: str) -> str:
    """A plain folder name made from ``stem`` (a model's file name): every character
    :func:`check_folder_name` refuses becomes ``_``; ``model`` when nothing is left."""
    name = "".join(c if c.isalnum() or c in NAME_PUNCTUATION else "_" for c in stem).lstrip(".-")
    return name or "model"


def bad_path_chars(path: str) -> list[str]:
    """What SCons cannot carry in a build folder's path: ``$`` (SCons expands it in every target
    name) and control characters (a newline ends a line of SCons's output and database)."""
    bad = []
    for c in str(path):
        if (c == "$" or ord(c) < 32 or ord(c) == 127) and c not in bad:
            bad.append(c)
    return bad


def shown(text) -> str:
    """``text`` for a one-line message: as it is, or quoted with escapes (``repr``) when it holds a
    control character (a newline, an ANSI escape) that would break or recolour the line."""
    t = str(text)
    return repr(t) if any(ord(c) < 32 or ord(c) == 127 for c in t) else t


def check_build_dir(path: str, option: str = "build_dir=") -> str:
    """``path`` if SCons can build into it (:func:`bad_path_chars`); returns it.

    Raises:
        StageError: one line naming the characters and the fix.
    """
    bad = bad_path_chars(path)
    if not bad:
        return path
    names = ", ".join("a newline" if c == "\n" else repr(c) for c in bad)
    raise StageError(f"{option}{str(path)!r} holds {names}, which SCons cannot carry in a file name ('$' would "
                     "be expanded as an SCons variable, a control character splits its lines); build into a "
                     "folder without them")


def make_dirs(path: str | Path, what: str = "output folder", option: str = "--out") -> Path:
    """Create the folder ``path`` (and its parents) unless it exists; returns it.

    Raises:
        StageError: one line: the folder, why it cannot be created (a file where a folder must be, a
            read-only place such as ``/proc``, no permission) and the option that chooses another.
    """
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        return p
    except OSError as e:
        cause = e.strerror or str(e)
    existing = next((a for a in [p, *p.parents] if a.exists()), None)
    if existing is not None and not existing.is_dir():
        cause = f"{existing} is a file, not a folder"
    elif existing is not None and existing != p:
        cause = f"{existing} does not take new folders ({cause}: read-only, virtual or not yours)"
    raise StageError(f"cannot create the {what} {p}: {cause}; choose a writable folder with {option}")


LOCK_NAME = ".tabula.lock"
LOCK_ENV = "TABULA_BUILD_LOCK"
"""Set by a process that holds a folder's lock for its children (``tabula validate`` running SCons)."""


def lock_folder(folder: str | Path, holder: str) -> int | None:
    """Take ``folder``'s build lock (``<folder>/.tabula.lock``, an exclusive ``flock``) for the rest of
    this process's life (the kernel drops it when the process ends, however it ends); returns the
    lock's file descriptor, or None when ``$TABULA_BUILD_LOCK`` says a parent holds it already.
    ``holder`` (e.g. the command line) is written into the file for the message another build gets.

    Raises:
        StageError: another process holds the lock: one line naming the folder, that process and the fix.
    """
    import fcntl

    path = Path(folder) / LOCK_NAME
    if os.environ.get(LOCK_ENV) == str(path.resolve()):
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise StageError(f"cannot create the build lock {path}: {e.strerror or e}; choose a writable build_dir=") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            other = os.read(fd, 400).decode("utf-8", "replace").strip().splitlines()[0]
        except (OSError, IndexError):
            other = "unknown"
        os.close(fd)
        raise StageError(f"{folder} is being built by another process ({other}); wait for it to finish, or build "
                         "into another build_dir= (two builds of one folder would run every stage twice)") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()}: {shown(holder)}\n".encode("utf-8", "replace"))
    return fd
