"""Run firmware under ``qemu-system-arm`` with the board's UART on a local TCP socket.

Board settings (``board.runner["qemu"]``, all optional): ``machine`` ("mps3-an547"),
``serial_index`` (which UART carries the link, 0), ``icount_shift`` (0; None for no -icount),
``timeout_s`` (120), ``extra_args`` ([]). QEMU's stdout/stderr (semihosting output, faults) go to
the log file. The firmware ends through semihosting SYS_EXIT_EXTENDED, so QEMU's exit code is
the firmware's.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from ..link import Link, SocketLink
from ._process import Runner as _Runner
from ._process import RunnerError, log_tail, runner_settings

NAME = "qemu"
QEMU = "qemu-system-arm"
DEFAULTS = {"machine": "mps3-an547", "serial_index": 0, "icount_shift": 0, "timeout_s": 120,
            "extra_args": []}
CONNECT_TIMEOUT_S = 10.0
PORT_ATTEMPTS = 3


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def qemu_command(elf_path: str | os.PathLike, settings: dict, port: int, qemu: str = QEMU) -> list[str]:
    """The QEMU command line. ``-display none`` (not -nographic, which would put a serial port
    and the monitor on stdio) and explicit ``-serial`` for every UART up to ours, so the only
    link is our socket and QEMU's stdout carries only semihosting output."""
    s = {**DEFAULTS, **settings}
    cmd = [qemu, "-M", s["machine"], "-display", "none", "-monitor", "none", "-no-reboot",
           "-semihosting-config", "enable=on,target=native"]
    if s["icount_shift"] is not None:
        cmd += ["-icount", f"shift={s['icount_shift']}"]
    # nodelay: without it Nagle holds each short reply frame ~40 ms (digits' 360 samples 18.5 s -> ~2 s)
    cmd += ["-chardev", f"socket,id=uart,host=127.0.0.1,port={port},server=on,wait=on,nodelay=on"]
    for _ in range(int(s["serial_index"])):
        cmd += ["-serial", "null"]
    cmd += ["-serial", "chardev:uart", *s["extra_args"], "-kernel", str(elf_path)]
    return cmd


class Runner(_Runner):
    NAME = NAME

    def __init__(self, log_path=None, qemu: str = QEMU, **options):
        super().__init__(log_path, **options)
        self.qemu = qemu
        self.command: list[str] | None = None

    def default_timeout(self, board=None) -> float:
        return float(runner_settings(board, NAME).get("timeout_s", DEFAULTS["timeout_s"]))

    def check_tools(self, board=None) -> None:
        if shutil.which(self.qemu) is None:
            raise RunnerError(f"{self.qemu} not found: "
                              "apt-get install --no-install-recommends qemu-system-arm")

    def open(self, elf: Path, board=None) -> Link:
        settings = runner_settings(board, NAME)
        for attempt in range(PORT_ATTEMPTS):
            port = _free_port()  # racy by nature: if QEMU cannot bind it, try another
            self.command = qemu_command(elf, settings, port, self.qemu)
            self.step = "start"
            self.spawn(self.command, stdin=subprocess.DEVNULL)
            self.step = "connect"
            link = self._connect(port)
            if link is not None:
                return link
            bind_failed = "Address already in use" in log_tail(self.log_path, 5)
            self.stop()
            if not bind_failed or attempt == PORT_ATTEMPTS - 1:
                raise RunnerError(f"qemu did not open its UART socket on port {port}; {self.describe()}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _connect(self, port: int) -> SocketLink | None:
        """Connect to QEMU's UART socket, retrying until QEMU listens, exits, or time runs out."""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return None
            try:
                return SocketLink.connect("127.0.0.1", port)
            except OSError:
                time.sleep(0.05)
        return None
