"""Writing a stage's files: atomically, and with one clear error when the disk is full or read-only.

A leaf module (only :mod:`tabula.errors`): every stage writes through :func:`write_atomic`, so a
failed write leaves neither a half-written file nor a ``*.tmp`` beside it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from .errors import StageError

__all__ = ["write_atomic", "tmp_path"]


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
