"""The one base class of every runner (:class:`Runner`) and what runners share: board settings, the
firmware check, child processes tied to this one, their log and a kill that leaves no stray.

A runner subclass says how to reach the firmware (:meth:`Runner.open`: start an emulator and connect
to its UART, flash a board and open its serial port, ...); the base class does the rest once:

- :meth:`Runner.start` -- the context manager every caller uses: checks the tools and the firmware,
  calls ``open``, yields the link, and closes the link and stops every process on the way out,
  whatever happened;
- :meth:`Runner.spawn` / :meth:`Runner.run_tool` -- start a program from an argument vector in its own
  process group, its output in the runner's log, tied to this process (:mod:`tabula.procs`: if the
  tabula process or the SCons build above it dies, QEMU, the FVP, the host firmware and pyocd die too);
  ``run_tool`` also bounds it in time and names the step that stalled;
- :meth:`Runner.wait` (the firmware's exit code), :meth:`Runner.stop` (idempotent: SIGTERM to the
  group, SIGKILL after ``TERM_WAIT_S``), :meth:`Runner.describe` (state and log tail, for errors).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

from tabula import procs
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


class Runner:
    """Base of every runner. Subclasses set ``NAME`` (and ``REPORTS_EXIT_CODE`` when the process's exit
    code is not the firmware's) and implement :meth:`open`; they may override :meth:`check_tools`
    (programs that must be installed: checked first, before the firmware), :meth:`firmware` and
    :meth:`explain`."""

    NAME = "runner"
    REPORTS_EXIT_CODE = True   # the process's exit code is the firmware's (semihosting / exit())

    def __init__(self, log_path: str | os.PathLike | None = None, **options):
        self.log_path = Path(log_path) if log_path is not None else None
        self.options = options
        self.proc: subprocess.Popen | None = None
        self.commands: list[list[str]] = []
        self.step = "not started"
        self._log = None
        self._log_used = False

    # ---- what a subclass provides ------------------------------------------------------------
    def check_tools(self, board=None) -> None:
        """Raise RunnerError (one line, with the install command) when a program the runner needs is missing."""

    def firmware(self, elf_path: str | os.PathLike) -> Path:
        """The firmware file, resolved; RunnerError when it is missing or built for another machine."""
        elf = Path(elf_path).resolve()
        if not elf.is_file():
            raise RunnerError(f"{self.NAME} runner: no firmware at {elf}")
        check_elf_for(elf, self.NAME)
        return elf

    def open(self, elf: Path, board=None):
        """Start the firmware and return a Link to it (everything started goes through :meth:`spawn`)."""
        raise NotImplementedError

    def explain(self, error: BaseException) -> str | None:
        """A short clause added to a session error's first line saying which step stalled (None: nothing to add)."""
        return None

    # ---- the runner interface ------------------------------------------------------------------
    @contextlib.contextmanager
    def start(self, elf_path: str | os.PathLike, board=None) -> Iterator:
        """Start the firmware; yields the Link. On the way out the link is closed and every process
        this runner started is stopped, whether the session succeeded, failed or was interrupted."""
        link = None
        try:
            self.step = "tools"
            self.check_tools(board)
            self.step = "firmware"
            elf = self.firmware(elf_path)
            link = self.open(elf, board)
            self.step = "session"
            yield link
        finally:
            if link is not None:
                link.close()
            self.stop()

    def _open_log(self) -> None:
        if self._log is not None:
            return
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix=f"tabula-{self.NAME}-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab" if self._log_used else "wb")  # fresh per run, then appended
        self._log_used = True

    def log(self, text: str) -> None:
        """Append a line to the runner's log."""
        self._open_log()
        self._log.write((text.rstrip("\n") + "\n").encode("utf-8", "replace"))
        self._log.flush()

    def spawn(self, cmd: list[str], **popen_kwargs) -> subprocess.Popen:
        """Start ``cmd`` (an argument vector) in its own process group, tied to this process, its
        stderr (and stdout unless given) in the log; it becomes :attr:`proc` (what wait and stop act on)."""
        self.commands.append([str(c) for c in cmd])
        self.log("$ " + " ".join(str(c) for c in cmd))
        popen_kwargs.setdefault("stdout", self._log)
        self.proc = procs.popen(cmd, stderr=self._log, own_group=True, **popen_kwargs)
        return self.proc

    def run_tool(self, cmd: list[str], step: str, timeout_s: float, hint: str = "") -> subprocess.CompletedProcess:
        """Run a helper program to completion (e.g. ``pyocd load``): argument vector, own process group,
        tied to this process, output captured and logged.

        Raises:
            RunnerError: it did not finish within ``timeout_s`` (its group is killed; the message names
                ``step``, the command and ``hint``), or it could not be started.
        """
        self.step = step
        cmd = [str(c) for c in cmd]
        self.commands.append(cmd)
        try:
            r = procs.run(cmd, capture_output=True, text=True, timeout=timeout_s, own_group=True)
        except subprocess.TimeoutExpired as e:
            out = ((e.stdout or b"") if isinstance(e.stdout, bytes) else (e.stdout or "").encode())
            self.log(f"$ {' '.join(cmd)}\n{out.decode('utf-8', 'replace')}(killed after {timeout_s:g} s)")
            raise RunnerError(f"{self.NAME} runner: step '{step}' stalled: {' '.join(cmd)} did not finish within "
                              f"{timeout_s:g} s{'; ' + hint if hint else ''}") from None
        except OSError as e:
            raise RunnerError(f"{self.NAME} runner: step '{step}': cannot run {cmd[0]}: {e.strerror or e}") from None
        self.log(f"$ {' '.join(cmd)}\n{r.stdout or ''}{r.stderr or ''}")
        return r

    def wait(self, timeout: float) -> int | None:
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

