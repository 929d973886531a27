"""tabula's errors: one base class, :class:`TabulaError`, for every problem a user can fix.

The CLI catches ``TabulaError`` and prints its message as one line (exit code :attr:`~TabulaError.exit_code`);
the Python API raises the same classes.  Each class keeps the builtin base it had (``ValueError``,
``RuntimeError``), so ``except ValueError`` still catches a bad scale or an unsupported op.

A leaf module: it imports nothing from tabula, so every stage can raise these without an import cycle.
The deploy stage's own failures (``SessionError`` and its kinds) live in :mod:`tabula.deploy.session`
and derive from :class:`TabulaError` too.
"""
from __future__ import annotations

__all__ = [
    "TabulaError", "StageError", "QuantizationError", "UnsupportedOpError", "IRError", "LoweringError",
    "InterpreterError", "RunnerError", "MissingFileError", "BoardError",
]


class TabulaError(Exception):
    """Base of every error tabula raises on purpose; the message names the problem and the fix."""

    #: Exit code of the ``tabula`` command for this error: 2 = bad input, 1 = the device or link failed.
    exit_code = 2


class StageError(TabulaError, RuntimeError):
    """A stage failed for a reason the user can fix; the message says which file and what to do."""


class MissingFileError(TabulaError, FileNotFoundError):
    """A file tabula was asked to read does not exist; the message names it and what makes it."""


class QuantizationError(TabulaError, ValueError):
    """A scale, zero point or table that the integer program cannot represent."""


class UnsupportedOpError(TabulaError, ValueError):
    """The model uses ops tabula cannot quantize and lower.

    ``ops``: ``[(op name, source)]``, every one in the model; ``supported``: the op names tabula
    does support (counted in the message, kept in ``supported``: the full list is README's rules table)."""

    def __init__(self, ops: list[tuple[str, str]], supported: list[str] | None = None):
        self.ops = ops
        self.supported = list(supported or [])
        lines = "\n".join(f"  - {name}  ({src})" for name, src in ops)
        known = (f"tabula supports {len(supported)} aten ops: README.md, 'Quantization schemes and rules', lists "
                 "them (tabula.rules.supported_ops() in Python).\n") if supported else ""
        super().__init__(
            f"{len(ops)} unsupported op(s) in the model:\n{lines}\n{known}"
            "Rewrite the model with supported ops, or add a rule in python/tabula/rules.py "
            "together with its lowering in python/tabula/lowering/ops/."
        )


class IRError(TabulaError, ValueError):
    """An IR graph that breaks an op contract (wrong dtype, shape or attribute), or an IR file that
    cannot be read."""


class LoweringError(TabulaError, ValueError):
    """A node of the converted graph that cannot be lowered; the message names the node and its source."""


class InterpreterError(TabulaError, RuntimeError):
    """A graph the reference cannot run: a missing op, a bad input, or an op whose result breaks
    the IR tensor it should produce.  The message names the op and its ``source`` node."""


class RunnerError(StageError):
    """The runner could not start the firmware (a missing emulator, pyocd, pack or port), or the
    firmware did not exit in time."""


class BoardError(TabulaError, ValueError):
    """A board that does not exist, or a ``boards/<name>/board.toml`` that cannot be read or lacks a
    key; the message names the file and what to fix."""
