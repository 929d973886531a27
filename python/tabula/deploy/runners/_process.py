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


#: ELF e_machine values tabula meets: the Arm targets, and the machines a host build may be for.
ELF_MACHINES = {40: "Arm (32-bit)", 62: "x86-64", 183: "AArch64", 3: "x86", 243: "RISC-V"}
_HOST_MACHINE = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "i386": 3, "i686": 3}


def elf_machine(path: str | os.PathLike) -> int | None:
    """The ``e_machine`` of an ELF file (40 = Arm), or None when ``path`` is not a (complete) ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def check_elf_for(path: str | os.PathLike, runner: str) -> None:
    """Refuse a program built for another machine before it is started, with the fix: Arm firmware on
    the ``host`` runner (the OS would say only "Exec format error"), a host program on an Arm runner
    (``qemu``, ``fvp``, ``board``: the emulator would say only that the link closed).  Files that are
    not complete ELFs (scripts, test stand-ins) are left to the runner.

    Raises:
        RunnerError: naming the file, what it was built for, and the ``board=`` that fits.
    """
    import platform

    m = elf_machine(path)
    if m is None:
        return
    what = ELF_MACHINES.get(m, f"ELF machine {m}")
    if runner == "host":
        host = _HOST_MACHINE.get(platform.machine().lower())
        if host is not None and m != host:
            raise RunnerError(f"host runner: {path} is built for {what}, not this machine "
                              f"({ELF_MACHINES.get(host, platform.machine())}): build it with board=host "
                              "(scons board=host), or run Arm firmware with its board's runner (qemu)")
    elif m != 40:
        raise RunnerError(f"{runner} runner: {path} is a {what} program, not Arm firmware: build it for an Arm "
                          "board (scons board=corstone300), or run a host build with board=host / runner=host")


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
