"""Run firmware on Arm's Corstone-300 FVP (``FVP_Corstone_SSE-300_Ethos-U55``).

The FVP's UART0 is a "telnet terminal" component. We stop it from launching an xterm
(``telnetterminal0.start_telnet=0``), put it in raw mode (no telnet negotiation bytes in the
stream) and connect to the port it announces on stdout ("telnetterminal0: Listening for serial
connection on port N") over TCP (:class:`~tabula.deploy.link.SocketLink`). ``uart0.out_file=-`` also copies everything
UART0 sends to the FVP's stdout, which goes to the runner's log: the transcript survives even if
the socket does not, and :func:`parse_transcript` reads frames and statistics back from it.
``uart0.shutdown_on_eot=1`` stops the FVP when the firmware writes EOT (0x04) after STATUS;
``--timelimit`` bounds a run that never ends. The FVP's exit code is not the firmware's (that
comes in STATUS), so ``REPORTS_EXIT_CODE`` is False.

Board settings (``board.runner["fvp"]``): ``binary``, ``args`` (the board's -C flags),
``timeout_s``, ``timelimit_s``, ``start_port``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..link import Link, SocketLink
from ..protocol import Frame, FrameParser
from ._process import Runner as _Runner
from ._process import RunnerError, runner_settings

NAME = "fvp"
BINARY = "FVP_Corstone_SSE-300_Ethos-U55"
REPORTS_EXIT_CODE = False
DEFAULTS = {"binary": BINARY, "timeout_s": 300, "timelimit_s": 600, "start_port": 5000,
            "args": ["-C", "mps3_board.visualisation.disable-visualisation=1",
                     "-C", "mps3_board.telnetterminal0.start_telnet=0",
                     "-C", "mps3_board.uart0.out_file=-",
                     "-C", "mps3_board.uart0.shutdown_on_eot=1"]}
# Always added: the link needs a raw, quiet terminal 0 on a known port, and the other terminals
# must not try to launch xterms on a headless CI machine.
LINK_ARGS = ["-C", "mps3_board.telnetterminal0.mode=raw",
             "-C", "mps3_board.telnetterminal0.quiet=1",
             "-C", "mps3_board.telnetterminal1.start_telnet=0",
             "-C", "mps3_board.telnetterminal2.start_telnet=0",
             "-C", "mps3_board.uart0.unbuffered_output=1"]
CONNECT_TIMEOUT_S = 60.0   # the FVP takes a few seconds to elaborate the model

_LISTEN = re.compile(rb"(telnetterminal\d+): Listening for serial connection on port (\d+)\r?\n")  # whole lines only
_MIPS = re.compile(rb"^\s*(\S*cpu\d*)\s*:\s*([\d.]+)\s*MIPS\s*\(\s*(\d+)\s*Inst\)", re.M)
_STAT = re.compile(rb"^(Simulated time|User time|System time|Wall time)\s*:\s*([\d.]+)s", re.M)
_STOP = re.compile(rb"^(?:Info|Warning|Error):.*(?:stopp|terminat|time ?limit).*$", re.M | re.I)


def _npu_plan(elf_path) -> dict:
    import json

    try:
        plan = json.loads((Path(elf_path).parent / "npu" / "plan.json").read_text())
    except (OSError, ValueError):
        return {}
    return plan if isinstance(plan, dict) else {}


def npu_args(elf_path: str | os.PathLike) -> list[str]:
    """``-C ethosu.num_macs=<n>`` for firmware built for an Ethos-U target (``<elf dir>/npu/plan.json``, from
    ``scons npu=...``: the FVP's NPU then has the target's MACs per cycle); nothing for a CPU-only build."""
    macs = _npu_plan(elf_path).get("macs")
    return ["-C", f"ethosu.num_macs={int(macs)}"] if isinstance(macs, int) else []


def fvp_command(elf_path: str | os.PathLike, settings: dict, binary: str | None = None) -> list[str]:
    """The FVP command line for one run (an NPU build's also sets the NPU's MACs, :func:`npu_args`, and an
    Ethos-U65 build runs the U65 model of the Corstone-300 instead of the board's default U55 one)."""
    s = {**DEFAULTS, **settings}
    binary = binary or s["binary"]
    if binary == BINARY and _npu_plan(elf_path).get("family") == "ethos-u65":
        binary = "FVP_Corstone_SSE-300_Ethos-U65"
    cmd = [binary, *s["args"], *LINK_ARGS, *npu_args(elf_path),
           "-C", f"mps3_board.telnetterminal0.start_port={int(s['start_port'])}",
           "-a", str(elf_path), "--stat"]
    if s.get("timelimit_s"):
        cmd += ["--timelimit", str(int(s["timelimit_s"]))]
    return cmd


@dataclass
class FvpTranscript:
    """What an FVP run printed: terminal ports, UART0 frames (via ``uart0.out_file=-``), the
    ``--stat`` block and why it stopped."""
    ports: dict[str, int] = field(default_factory=dict)
    frames: list[Frame] = field(default_factory=list)
    eot: bool = False
    instructions: dict[str, int] = field(default_factory=dict)   # cpu name -> instructions run
    times_s: dict[str, float] = field(default_factory=dict)      # "Simulated time" etc.
    stop_lines: list[str] = field(default_factory=list)

    @property
    def timed_out(self) -> bool:
        return any(re.search("time ?limit", ln, re.I) for ln in self.stop_lines)


def parse_transcript(data: bytes) -> FvpTranscript:
    """Read an FVP's stdout (the runner's log): never raises on odd input."""
    t = FvpTranscript()
    for m in _LISTEN.finditer(data):
        t.ports.setdefault(m.group(1).decode(), int(m.group(2)))
    parser = FrameParser()
    t.frames = parser.feed(data)
    t.eot = parser.eot_count > 0
    for m in _MIPS.finditer(data):
        t.instructions[m.group(1).decode()] = int(m.group(3))
    for m in _STAT.finditer(data):
        t.times_s[m.group(1).decode()] = float(m.group(2))
    t.stop_lines = [m.group(0).decode("utf-8", "replace").strip() for m in _STOP.finditer(data)]
    return t


class Runner(_Runner):
    NAME = NAME
    REPORTS_EXIT_CODE = REPORTS_EXIT_CODE

    def __init__(self, log_path=None, binary: str | None = None, **options):
        super().__init__(log_path, **options)
        self.binary = binary
        self.command: list[str] | None = None

    def _binary(self, board) -> str:
        return self.binary or runner_settings(board, NAME).get("binary", BINARY)

    def check_tools(self, board=None) -> None:
        binary = self._binary(board)
        if shutil.which(binary) is None:
            raise RunnerError(f"{binary} not found: download the Corstone-300 FVP from "
                              "developer.arm.com and put it on PATH (README section: Running on the Corstone-300 FVP in CI)")

    def open(self, elf: Path, board=None) -> Link:
        self.command = fvp_command(elf, runner_settings(board, NAME), self._binary(board))
        self.step = "start"
        self.spawn(self.command, stdin=subprocess.DEVNULL)
        self.step = "connect"
        return self._connect(self._announced_port())

    def _announced_port(self) -> int:
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while time.monotonic() < deadline:
            data = self.log_path.read_bytes() if self.log_path.exists() else b""
            ports = parse_transcript(data).ports
            if "telnetterminal0" in ports:
                return ports["telnetterminal0"]
            if self.proc.poll() is not None:
                raise RunnerError(f"the FVP exited before it announced its UART0 port "
                                  f"(telnetterminal0); {self.describe()}")
            time.sleep(0.05)
        raise RunnerError(f"the FVP did not announce its UART0 port (telnetterminal0) within "
                          f"{CONNECT_TIMEOUT_S:g} s; {self.describe()}")

    def _connect(self, port: int) -> SocketLink:
        deadline = time.monotonic() + 10.0
        while True:
            try:
                return SocketLink.connect("127.0.0.1", port)
            except OSError as e:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RunnerError(f"cannot connect to the FVP's UART0 on port {port}: {e}; "
                                      f"{self.describe()}") from e
                time.sleep(0.05)

    def transcript(self) -> FvpTranscript:
        """The run's stdout, parsed (call after the run)."""
        data = self.log_path.read_bytes() if self.log_path and self.log_path.exists() else b""
        return parse_transcript(data)

