"""The build's structured record, for ``tabula validate`` (and any script driving SCons).

When ``$TABULA_STATUS`` names a file, every stage appends one JSON object per line to it: SCons
(``SConstruct``) says where the build goes (``{"stage": "scons", "out": ..., "firmware": ..., "model":
..., "data": ...}``) or why it refused its options; a ``tabula`` stage that fails says why
(``{"stage": "quantize", "error": "...", "exit_code": 2}``); a compile or link that fails says which
file and the compiler's first error.  The caller reads the records (:func:`read`) instead of scraping
SCons's output.  Without the variable nothing is written.

A leaf module: only the standard library.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["STATUS_ENV", "record", "read", "first_error"]

STATUS_ENV = "TABULA_STATUS"


def record(stage: str, **fields) -> None:
    """Append ``{"stage": stage, **fields}`` to ``$TABULA_STATUS`` (one line, one write: records of
    parallel jobs do not interleave); nothing when the variable is unset or the file cannot be written."""
    path = os.environ.get(STATUS_ENV)
    if not path:
        return
    line = json.dumps({"stage": stage, **fields}, sort_keys=True, default=str) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def read(path: str | os.PathLike) -> list[dict]:
    """The records in ``path`` (none when it is missing); a line that is not a JSON object is skipped."""
    p = Path(path)
    if not p.is_file():
        return []
    out = []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict):
            out.append(r)
    return out


def first_error(records: list[dict]) -> dict | None:
    """The first record that carries an ``error`` (the cause; later ones are its consequences)."""
    return next((r for r in records if r.get("error")), None)
