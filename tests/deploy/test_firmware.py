"""Device runtime end to end: build the echo fixture model (tests/fixtures/echo_model) for the
host and Corstone-300 boards, run it (host executable over pipes; QEMU mps3-an547 over a UART
socket) and speak docs/protocol.md to it with the minimal framing helpers below.

The echo model: output 0 = input 0 + 1 (16 bytes); output 1 = FNV-1a-32 over both inputs,
64 rounds, little-endian; status 1 when input 0 starts with 0xEE.
"""
from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from tabula.boards import list_boards, load_board, repo_root

SCONSTRUCT = repo_root() / "tests" / "fixtures" / "echo_model" / "SConstruct"
SEED = int(os.environ.get("TABULA_TEST_SEED", "1234"))

HELLO, INPUT, OUTPUT, END, STATUS, NACK, RESEND, EXIT = 1, 2, 3, 4, 5, 6, 7, 8
NACK_CRC, NACK_LENGTH, NACK_TYPE, NACK_TOO_LONG, NACK_NOT_AVAILABLE = 1, 2, 3, 4, 5
EXIT_LINK_CLOSED = 64
IN_SIZES, OUT_SIZES = (16, 4), (16, 4)


# ---- minimal protocol helpers (independent of tabula.deploy.protocol on purpose) ----

def encode(ftype: int, seq: int, payload: bytes = b"", length: int | None = None) -> bytes:
    length = len(payload) if length is None else length
    body = struct.pack(">BHH", ftype, seq, length) + payload
    return b"#" + body.hex().encode() + b"%08x\n" % zlib.crc32(body)


class Link:
    """Byte pipe to the device (read fd, write fd) that splits what it reads into frames."""

    def __init__(self, rfd: int, wfd: int, timeout: float):
        self.rfd, self.wfd, self.timeout = rfd, wfd, timeout
        self.buf = b""
        self.noise = b""   # bytes seen outside frames

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view):]

    def _fill(self, deadline: float) -> bool:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
            return False
        chunk = os.read(self.rfd, 65536)
        if not chunk:
            raise EOFError("link closed by the device")
        self.buf += chunk
        return True

    def frame(self) -> tuple[int, int, bytes]:
        deadline = time.monotonic() + self.timeout
        while True:
            start = self.buf.find(b"#")
            end = self.buf.find(b"\n", start) if start >= 0 else -1
            if end >= 0:
                self.noise += self.buf[:start]
                text, self.buf = self.buf[start + 1:end], self.buf[end + 1:]
                body, crc = bytes.fromhex(text[:-8].decode()), int(text[-8:], 16)
                assert zlib.crc32(body) == crc, f"bad CRC from device: {text!r}"
                ftype, seq, length = struct.unpack(">BHH", body[:5])
                assert length == len(body) - 5
                return ftype, seq, body[5:]
            if not self._fill(deadline):
                raise TimeoutError(f"no frame within {self.timeout}s; got {self.buf[:200]!r}")

    def expect(self, ftype: int, seq: int) -> bytes:
        got_type, got_seq, payload = self.frame()
        assert (got_type, got_seq) == (ftype, seq), f"expected type {ftype} seq {seq}, got " \
            f"type {got_type} seq {got_seq} payload {payload.hex()}"
        return payload

    def byte(self) -> int:
        deadline = time.monotonic() + self.timeout
        while not self.buf:
            if not self._fill(deadline):
                raise TimeoutError("no byte")
        b, self.buf = self.buf[0], self.buf[1:]
        return b


def echo_expected(in0: bytes, in1: bytes) -> bytes:
    h = 2166136261
    for _ in range(64):
        for b in in0 + in1:
            h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return bytes((b + 1) & 0xFF for b in in0) + struct.pack("<I", h)


def random_inputs(rng) -> tuple[bytes, bytes]:
    in0 = bytearray(rng.integers(0, 256, 16, dtype=np.uint8).tobytes())
    in0[0] = in0[0] if in0[0] != 0xEE else 0   # 0xEE makes the model fail on purpose
    return bytes(in0), rng.integers(0, 256, 4, dtype=np.uint8).tobytes()


# ---- sessions, shared by every board ----

def check_hello(link: Link, board, seq: int = 0) -> bytes:
    p = link.expect(HELLO, seq)
    assert p[:4] == bytes([2, 2, 2, 0])          # protocol version 2, 2 inputs, 2 outputs
    sizes = struct.unpack("<4I", p[4:20])
    assert sizes == IN_SIZES + OUT_SIZES
    assert struct.unpack("<I", p[20:24])[0] == board.tick_hz
    assert p[24:].decode() == board.name
    return p


def infer(link: Link, seq: int, in0: bytes, in1: bytes) -> tuple[int, int, bytes]:
    link.send(encode(INPUT, seq, in0 + in1))
    p = link.expect(OUTPUT, seq)
    ticks, status = struct.unpack("<Ii", p[:8])
    return ticks, status, p[8:]


def read_status(link: Link, seq: int) -> tuple[int, int, int, int]:
    """(exit code, inferences, frames rejected, OUTPUTs replayed) from a version 2 STATUS."""
    return struct.unpack("<iIII", link.expect(STATUS, seq))


def session_ok(link: Link, board) -> list[int]:
    """Three inferences, then every rejection path, then the retry requests (a repeated INPUT, RESEND,
    a HELLO request, END twice), then EXIT. Returns the measured ticks."""
    rng = np.random.default_rng(SEED)
    hello = check_hello(link, board)
    assert board.name.encode() in link.noise          # the boot banner, outside any frame

    ticks_seen = []
    for seq in range(3):
        in0, in1 = random_inputs(rng)
        ticks, status, out = infer(link, seq, in0, in1)
        assert (status, out) == (0, echo_expected(in0, in1))
        assert ticks > 0
        ticks_seen.append(ticks)

    in0, in1 = random_inputs(rng)
    link.send(b"boot noise, no hash here\r\n")            # ignored between frames
    assert infer(link, 3, in0, in1)[1:] == (0, echo_expected(in0, in1))

    good = encode(INPUT, 4, in0 + in1)
    bad = bytearray(good)
    bad[12] = ord("0") if bad[12] != ord("0") else ord("1")   # one payload digit flipped
    link.send(bytes(bad))
    assert link.expect(NACK, 4) == bytes([NACK_CRC])
    link.send(good)                                        # the host's resend
    assert link.expect(OUTPUT, 4)[8:] == echo_expected(in0, in1)

    link.send(encode(INPUT, 5, in0 + in1[:3]))             # 19 bytes, model wants 20
    assert link.expect(NACK, 5) == bytes([NACK_LENGTH])
    link.send(encode(0x7F, 6, b"\x01"))
    assert link.expect(NACK, 6) == bytes([NACK_TYPE])
    link.send(encode(INPUT, 7, b"", length=4097)[:11] + b"00" * 50)   # header says 4097 bytes
    assert link.expect(NACK, 7) == bytes([NACK_TOO_LONG])
    link.send(b"#zz\n")                                    # not hex: sequence unknown
    assert link.expect(NACK, 0xFFFF) == bytes([NACK_CRC])
    link.send(b"#0200080014abcd" + encode(INPUT, 8, in0 + in1))   # '#' mid-frame: resync
    out8 = link.expect(OUTPUT, 8)
    assert out8[8:] == echo_expected(in0, in1)

    # Idempotent requests: the stored OUTPUT comes back byte for byte (ticks too: not recomputed).
    link.send(encode(INPUT, 8, in0 + in1))                 # the host did not get OUTPUT 8
    assert link.expect(OUTPUT, 8) == out8
    link.send(encode(RESEND, 8))
    assert link.expect(OUTPUT, 8) == out8
    link.send(encode(RESEND, 7))                           # not the last one: not held
    assert link.expect(NACK, 7) == bytes([NACK_NOT_AVAILABLE])
    link.send(encode(HELLO, 5))                            # "say HELLO again", answered with seq 5
    assert check_hello(link, board, seq=5) == hello
    other0 = bytes((b + 1) & 0xFF for b in in0[:1]) + in0[1:]
    link.send(encode(INPUT, 8, other0 + in1))              # same seq, other content: a new request
    assert link.expect(OUTPUT, 8)[8:] == echo_expected(other0, in1)

    link.send(encode(END, 9))
    # 7 inferences (seq 0-4, 8 and the new 8); 3 damaged frames NACKed (CRC, too long, '#zz');
    # 2 OUTPUTs replayed
    assert read_status(link, 9) == (0, 7, 3, 2)
    link.send(encode(END, 9))                              # the host did not get STATUS
    assert read_status(link, 9) == (0, 7, 3, 2)
    link.send(encode(EXIT, 9))
    assert link.byte() == 0x04
    return ticks_seen


def session_model_error(link: Link, board) -> None:
    """A failing inference is reported in its OUTPUT and becomes the exit code."""
    check_hello(link, board)
    bad_in0 = bytes([0xEE]) + bytes(15)
    ticks, status, out = infer(link, 0, bad_in0, bytes(4))
    assert (status, out) == (1, echo_expected(bad_in0, bytes(4)))
    assert infer(link, 1, bytes(16), bytes(4))[1] == 0
    link.send(encode(END, 2))
    assert read_status(link, 2) == (1, 2, 0, 0)
    link.send(encode(EXIT, 2))
    assert link.byte() == 0x04


# ---- building ----

_built: dict[str, Path] = {}


def build(board_name: str, tmp_root: Path) -> Path:
    if board_name not in _built:
        out = tmp_root / board_name
        out.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "SCons", "-Q", "-f", str(SCONSTRUCT),
               f"board={board_name}", f"build_dir={out}"]
        # The fixture's SConstruct imports tabula: this checkout's, not whichever is installed.
        path = os.pathsep.join(p for p in [str(repo_root() / "python"), os.environ.get("PYTHONPATH")] if p)
        r = subprocess.run(cmd, cwd=out, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path})
        assert r.returncode == 0, r.stdout + r.stderr
        suffix = ".elf" if load_board(board_name).toolchain == "arm_gnu" else ""
        _built[board_name] = out / f"firmware{suffix}"
        assert _built[board_name].is_file()
    return _built[board_name]




@pytest.fixture(scope="module")
def build_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("firmware")


# ---- host board ----

def run_host(exe: Path, session) -> int:
    board = load_board("host")
    proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        session(Link(proc.stdout.fileno(), proc.stdin.fileno(), timeout=10), board)
        proc.stdin.close()
        return proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.host
def test_host_session(build_root):
    ticks = []
    assert run_host(build("host", build_root), lambda link, b: ticks.extend(session_ok(link, b))) == 0
    print(f"host ticks (ns) per inference: {ticks}")


@pytest.mark.host
def test_host_model_error_sets_exit_code(build_root):
    assert run_host(build("host", build_root), session_model_error) == 1


@pytest.mark.host
def test_host_link_closed(build_root):

    def before_end(link, board, close_stdin):
        check_hello(link, board)
        close_stdin()
        assert read_status(link, 0xFFFF) == (EXIT_LINK_CLOSED, 0, 0, 0)
        assert link.byte() == 0x04

    def after_end(link, board, close_stdin):     # the host has STATUS and went away: a normal end
        check_hello(link, board)
        link.send(encode(END, 0))
        assert read_status(link, 0) == (0, 0, 0, 0)
        close_stdin()
        assert read_status(link, 0xFFFF) == (0, 0, 0, 0)
        assert link.byte() == 0x04

    exe = build("host", build_root)
    for session, code in [(before_end, EXIT_LINK_CLOSED), (after_end, 0)]:
        proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            session(Link(proc.stdout.fileno(), proc.stdin.fileno(), timeout=10), load_board("host"),
                    proc.stdin.close)
            assert proc.wait(timeout=10) == code
        finally:
            proc.kill()
            proc.wait()


# ---- Corstone-300 on QEMU ----

def qemu_command(board, elf: Path, sock: Path) -> list[str]:
    q = board.runner_config("qemu")
    serial = ["-serial", "null"] * q["serial_index"] + ["-serial", "chardev:link"]
    return ["qemu-system-arm", "-M", q["machine"], "-display", "none", "-monitor", "none",
            "-no-reboot", "-semihosting-config", "enable=on,target=native", *q["extra_args"],
            "-icount", f"shift={q['icount_shift']}",
            "-chardev", f"socket,id=link,path={sock},server=on,wait=on", *serial,
            "-kernel", str(elf)]


def run_qemu(elf: Path, session, board_name: str = "corstone300") -> int:
    board = load_board(board_name)
    tmp = Path(tempfile.mkdtemp(prefix="tabula-q"))   # short: unix socket paths max ~107 chars
    sock_path = tmp / "uart0.sock"
    proc = subprocess.Popen(qemu_command(board, elf, sock_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                s.connect(str(sock_path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "QEMU did not open its UART socket"
                time.sleep(0.02)
        with s:
            session(Link(s.fileno(), s.fileno(), timeout=30), board)
            return proc.wait(timeout=board.runner_config("qemu")["timeout_s"])
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


QEMU_BOARDS = ["corstone300", "mps2_an386", "mps2_an500", "mps2_an505"]


@pytest.mark.qemu
@pytest.mark.parametrize("board_name", QEMU_BOARDS)
def test_qemu_session(build_root, board_name):
    ticks = []
    rc = run_qemu(build(board_name, build_root), lambda link, b: ticks.extend(session_ok(link, b)),
                  board_name)
    assert rc == 0
    # -icount shift=0: 1 instruction = 1 ns of virtual time; SysTick counts the core clock
    # (20-32 MHz). The same work every time, so the counts differ at most by one tick's phase.
    assert max(ticks) - min(ticks) <= 1, ticks
    instructions = ticks[0] * 1e9 / load_board(board_name).tick_hz
    # The echo model: 64 rounds of FNV-1a over 20 bytes, ~5-8 instructions per byte on any
    # Armv7-M/v8-M core. A wrong tick_hz in board.toml would be off by 25-60 %.
    assert 64 * 20 * 4 < instructions < 64 * 20 * 10, instructions
    print(f"{board_name} ticks per inference: {ticks} (~{instructions:.0f} instructions)")


@pytest.mark.qemu
@pytest.mark.parametrize("board_name", QEMU_BOARDS)
def test_qemu_model_error_sets_exit_code(build_root, board_name):
    assert run_qemu(build(board_name, build_root), session_model_error, board_name) == 1


# ---- boards and toolchain errors ----

def test_boards_listed_and_unknown_board_names_them():
    assert {"corstone300", "host"} <= set(list_boards())
    with pytest.raises(ValueError, match="corstone300.*host"):
        load_board("no-such-board")


def test_missing_cross_compiler_is_one_clear_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))          # nothing on PATH
    cmd = [sys.executable, "-m", "SCons", "-Q", "-f", str(SCONSTRUCT),
           "board=corstone300", f"build_dir={tmp_path}"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode != 0
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("scons: ***")]
    assert lines == ["scons: *** arm-none-eabi-gcc not found; install it with: apt-get install "
                     "--no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi"], r.stderr
