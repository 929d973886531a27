"""Shared by the process-based runners: board settings, a child process in its own process
group with its output going to a log file, and a kill that cannot leave strays behind."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path


from tabula.errors import RunnerError


def runner_settings(board, name: str) -> dict:
    """``board.runner[name]`` as a dict ({} when the board or the entry is missing)."""
    runner = getattr(board, "runner", None) or {}
    return dict(runner.get(name) or {})


def log_tail(path: Path | None, n_lines: int = 20) -> str:
    if path is None or not Path(path).exists():
        return "(no log)"
    lines = Path(path).read_bytes().decode("utf-8", errors="replace").splitlines()
    if not lines:
        return "(log empty)"
    tail = lines[-n_lines:]
    # A fatal line (e.g. "qemu: fatal: Lockup") is often followed by a long register dump.
    key = [ln for ln in lines[:-n_lines] if "fatal" in ln.lower() or "error" in ln.lower()]
    return "\n".join(key[-3:] + (["..."] if key else []) + tail)


TERM_WAIT_S = 2.0


class ProcessRunner:
    """Owns one child process; subclasses build the command and the Link."""

    NAME = "process"
    REPORTS_EXIT_CODE = True   # the process's exit code is the firmware's (semihosting / exit())

    def __init__(self, log_path: str | os.PathLike | None = None):
        self.log_path = Path(log_path) if log_path is not None else None
        self.proc: subprocess.Popen | None = None
        self._log = None

    def _spawn(self, cmd: list[str], **popen_kwargs) -> subprocess.Popen:
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix=f"tabula-{self.NAME}-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self._log.write(("$ " + " ".join(cmd) + "\n").encode())
        self._log.flush()
        popen_kwargs.setdefault("stdout", self._log)
        self.proc = subprocess.Popen(cmd, stderr=self._log, start_new_session=True,
                                     **popen_kwargs)
        return self.proc

    def wait(self, timeout: float) -> int:
        """The child's exit code; on timeout kill it and raise RunnerError with its log."""
        if self.proc is None:
            raise RunnerError(f"{self.NAME} runner: nothing started")
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RunnerError(f"{self.NAME}: firmware did not exit within {timeout:g} s; "
                              f"last lines of {self.log_path}:\n{log_tail(self.log_path)}") from None

    def stop(self) -> None:
        """End the child's whole process group if it is still running: SIGTERM first (QEMU and
        the FVP shut down cleanly and flush their logs), SIGKILL after ``TERM_WAIT_S``. Idempotent."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            for sig, wait_s in ((signal.SIGTERM, TERM_WAIT_S), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._log is not None:
            self._log.close()
            self._log = None

    def describe(self) -> str:
        """Exit state and log tail, for error messages."""
        state = "not started"
        if self.proc is not None:
            code = self.proc.poll()
            state = ("still running" if code is None else
                     f"killed by signal {-code}" if code < 0 else f"exited with {code}")
        return f"{self.NAME} {state}; last lines of {self.log_path}:\n{log_tail(self.log_path)}"
